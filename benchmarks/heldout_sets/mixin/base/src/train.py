"""python src/train.py [--config FILE] [--train.epochs 40 --optim.lr 0.005 ...]  -> one JSON line."""
import json
import os
import sys

os.environ.setdefault("DGLBACKEND", "pytorch")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gmx.config import load_config          # noqa: E402
from gmx.trainer import Trainer, prepare_data  # noqa: E402
from gmx.utils import seed_everything        # noqa: E402


def main(argv=None):
    cfg = load_config(argv)
    seed_everything(cfg.train.seed)
    data = prepare_data(cfg)
    metrics = Trainer(cfg=cfg, data=data).run()
    print(json.dumps(metrics))
    return metrics


if __name__ == "__main__":
    main()
