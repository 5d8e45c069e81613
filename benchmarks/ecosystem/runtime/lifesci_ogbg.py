"""Offline wrapper for awslabs/dgl-lifesci's ``examples/property_prediction/ogbg_ppa/main.py``.

    cd COPY_OF_dgl-lifesci && python .../lifesci_ogbg.py --epochs 3 --n_layers 2 ...

The arguments are the script's own. ``ogb.graphproppred`` becomes synthetic graphs with the same
interface, ``dgllife`` is the corpus copy's own ``python/`` package, and ``rdkit``, ``sklearn``
and ``joblib`` (imported by ``dgllife.data`` and ``dgllife.utils`` at import time, never used by
this example) are stubbed when absent. The script prints no loss, so the wrapper prints each
training loss from a forward hook on the criterion.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from benchmarks.ecosystem.runtime.offline import provide, run_script, stub_missing  # noqa: E402

SCRIPT = Path("examples/property_prediction/ogbg_ppa")


class _Subset:
    def __init__(self, graphs: list, labels) -> None:
        self.graphs, self.labels = graphs, labels

    def __getitem__(self, index):
        if isinstance(index, int):
            return self.graphs[index], self.labels[index:index + 1]
        return _Subset([self.graphs[int(i)] for i in index], self.labels[index])

    def __len__(self) -> int:
        return len(self.graphs)


def _graph_prop_dataset():
    import torch

    from benchmarks.ecosystem.runtime.synthetic import molecule_graphs

    class DglGraphPropPredDataset(_Subset):
        """Stands in for ``ogb.graphproppred.DglGraphPropPredDataset``."""

        num_classes = 3

        def __init__(self, name: str = "", root: str = "") -> None:
            super().__init__(*molecule_graphs(num_classes=self.num_classes))

        def get_idx_split(self) -> dict:
            order = torch.randperm(len(self), generator=torch.Generator().manual_seed(0))
            train, valid, test = order.tensor_split([int(0.7 * len(self)), int(0.85 * len(self))])
            return {"train": train, "valid": valid, "test": test}

    return DglGraphPropPredDataset


class _Evaluator:
    def __init__(self, name: str = "") -> None:
        pass

    def eval(self, input_dict: dict) -> dict:
        return {"acc": float((input_dict["y_true"] == input_dict["y_pred"]).mean())}


def _collate_dgl(samples: list):
    import dgl
    import torch

    graphs, labels = zip(*samples)
    return dgl.batch(graphs), torch.cat(labels)


def _print_loss(module, args, output) -> None:
    import torch

    if isinstance(module, torch.nn.CrossEntropyLoss) and module.training:
        print(f"train_loss: {output.item():.4f}", flush=True)


def main() -> None:
    stub_missing(["rdkit", "sklearn", "joblib"])
    import torch

    provide("ogb.graphproppred", DglGraphPropPredDataset=_graph_prop_dataset(),
            Evaluator=_Evaluator, collate_dgl=_collate_dgl)
    torch.nn.modules.module.register_module_forward_hook(_print_loss)
    root = Path.cwd()
    run_script(root / SCRIPT, "main.py", sys.argv[1:], extra_path=[root / "python"])


if __name__ == "__main__":
    main()
