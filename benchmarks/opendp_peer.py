"""One run of OpenDP's own AIM or MST (``opendp[mbi]``), the outside comparator of
benchmarks/peers.py. It runs in that environment only (OpenDP pins mbi 1.1 and its own
polars), never imports synth, and reads what the parent prepared:

    python opendp_peer.py SPEC.json

SPEC names the train split's CSV, the algorithm ("aim" or "mst"), ε, the public keys of
the categorical columns and the cuts of the numeric ones (as DP Wizard sets them: 10
equal-width bins over the public bounds), and where to write the synthetic CSV. One JSON
line goes to stdout: the seconds of the release and the sampling, and the peak RSS.
"""

from __future__ import annotations

import json
import resource
import sys
import time
import warnings
from pathlib import Path


def main() -> None:
    import opendp.prelude as dp
    import polars as pl

    spec = json.loads(Path(sys.argv[1]).read_text())
    dp.enable_features("contrib")
    context = dp.Context.compositor(
        data=pl.scan_csv(spec["train"], infer_schema_length=None),
        privacy_unit=dp.unit_of(contributions=1),
        # with keys and cuts for every column OpenDP takes pure ε-DP (δ = 0), as DP Wizard does
        privacy_loss=dp.loss_of(epsilon=spec["epsilon"]),
        split_evenly_over=1)
    algorithm = dp.mbi.AIM() if spec["algorithm"] == "aim" else dp.mbi.MST()
    started = time.perf_counter()
    table = (context.query().select(spec["columns"])
             .contingency_table(keys=spec["keys"], cuts=spec["cuts"], algorithm=algorithm)
             .release())
    released = time.perf_counter() - started
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        synthetic = table.synthesize(rows=spec["rows"])
    synthetic.write_csv(spec["out"])
    print(json.dumps({"seconds": round(time.perf_counter() - started, 1),
                      "release_seconds": round(released, 1),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}))


if __name__ == "__main__":
    main()
