"""Privacy core: budget and ledger, composition theorems, mechanisms, private domains, audits."""

from synth.privacy.budget import ADD_REMOVE, Budget, Ledger, LedgerEntry, default_delta

__all__ = ["ADD_REMOVE", "Budget", "Ledger", "LedgerEntry", "default_delta"]
