"""Offline wrapper for THUDM/GraphMAE2's ``main_full_batch.py``.

    cd COPY_OF_GraphMAE2 && python .../graphmae2.py --dataset cora --device -1 --max_epoch 30 ...

The arguments are the script's own. The citation datasets become a synthetic graph; ``wandb``,
``tensorboardX``, ``sklearn`` and ``ogb`` (imported by modules the full-batch path never uses
for cora) are stubbed when absent.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from benchmarks.ecosystem.runtime.offline import run_script, stub_missing  # noqa: E402


def main() -> None:
    # every tqdm refresh shows the epoch's loss; the default 0.1 s interval would drop most
    os.environ.setdefault("TQDM_MININTERVAL", "0")
    stub_missing(["wandb", "tensorboardX", "sklearn", "ogb"])
    import dgl.data

    from benchmarks.ecosystem.runtime.synthetic import CitationDataset

    for name in ("CoraGraphDataset", "CiteseerGraphDataset", "PubmedGraphDataset"):
        setattr(dgl.data, name, CitationDataset)
    run_script(Path.cwd(), "main_full_batch.py", sys.argv[1:])


if __name__ == "__main__":
    main()
