"""Issue 12, points 2 and 3: values and conditions, each as a small program of its own run
through the real `gm-audit check` (subprocess, JSON output): a bug is reported at its line, its
benign twin is not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import check_tree, run_cli

MODEL = (
    "import torch.nn as nn\n"
    "\n"
    "class GraphMAE(nn.Module):\n"
    "    def __init__(self, dim):\n"
    "        super().__init__()\n"
    "        self.enc = nn.Linear(dim, dim)\n"
    "\n"
    "    def forward(self, g, x):\n"
    "        return (self.enc(x) - x).pow(2).mean()\n"
    "\n"
    "class Probe(nn.Module):\n"
    "    def __init__(self, dim):\n"
    "        super().__init__()\n"
    "        self.fc = nn.Linear(dim, 2)\n"
    "\n"
    "    def forward(self, x):\n"
    "        return self.fc(x)\n"
    "\n"
    "def build_model(args):\n"
    "    return GraphMAE(args.dim)\n"
)

HELPERS = (
    "import torch.optim as optim\n"
    "\n"
    "def create_optimizer(name, model, lr, weight_decay):\n"
    "    params = model.parameters()\n"
    "    if name == 'adam':\n"
    "        return optim.Adam(params, lr=lr, weight_decay=weight_decay)\n"
    "    return optim.SGD(params, lr=lr)\n"
)

PRETRAIN = (
    "def pretrain(model, graph, optimizer, epochs):\n"
    "    for epoch in range(epochs):\n"
    "        model.train()\n"
    "        loss = model(graph, graph.ndata['feat'])\n"
    "        optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
    "    return model\n"
)


def check(tmp_path: Path, files: dict[str, str], codes: str) -> list[tuple[str, str, int]]:
    return check_tree(tmp_path, files, codes, levels=("error", "warning"))


# -- instances through factories, parameters and helpers (GM105) --------------------------------

def _factory_program(rebuild: bool) -> dict[str, str]:
    main = (
        "import argparse\n"
        "from models import build_model\n"
        "from helpers import create_optimizer\n"
        "from engine import pretrain\n"
        "\n"
        "def main(args, graph):\n"
        "    model = build_model(args)\n"
        "    optimizer = create_optimizer('adam', model, args.lr, args.wd)\n"
        + ("    model = build_model(args)\n" if rebuild else "    model = model.to('cpu')\n")
        + "    pretrain(model, graph, optimizer, args.epochs)\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    main(argparse.ArgumentParser().parse_args(), None)\n"
    )
    return {"models.py": MODEL, "helpers.py": HELPERS, "engine.py": PRETRAIN, "main.py": main}


def test_factory_model_rebuilt_after_its_helper_built_optimizer_is_stale(tmp_path):
    found = check(tmp_path, _factory_program(rebuild=True), "GM105")
    assert [(p, line) for _, p, line in found] in ([("main.py", 8)], [("main.py", 9)])


def test_factory_model_trained_through_pretrain_with_its_own_optimizer_is_clean(tmp_path):
    assert check(tmp_path, _factory_program(rebuild=False), "GM105") == []


def test_linear_probe_optimizer_on_detached_embeddings_is_not_stale(tmp_path):
    main = (
        "import torch\n"
        "import torch.nn.functional as F\n"
        "from models import build_model, Probe\n"
        "from helpers import create_optimizer\n"
        "from engine import pretrain\n"
        "\n"
        "def linear_probe(model, graph, labels):\n"
        "    with torch.no_grad():\n"
        "        emb = model.enc(graph.ndata['feat'])\n"
        "    clf = Probe(emb.shape[1])\n"
        "    opt = torch.optim.Adam(clf.parameters(), lr=0.01)\n"
        "    for _ in range(10):\n"
        "        loss = F.cross_entropy(clf(emb.detach()), labels)\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "\n"
        "def main(args, graph, labels):\n"
        "    model = build_model(args)\n"
        "    optimizer = create_optimizer('adam', model, args.lr, args.wd)\n"
        "    pretrain(model, graph, optimizer, args.epochs)\n"
        "    linear_probe(model, graph, labels)\n"
    )
    files = {"models.py": MODEL, "helpers.py": HELPERS, "engine.py": PRETRAIN, "main.py": main}
    assert check(tmp_path, files, "GM105") == []


# -- a custom loss given the prediction hides its `.sum()` (GM401) -------------------------------

def _custom_loss(body: str, call: str = "sce_loss(pred[mask], x[mask])") -> dict[str, str]:
    return {
        "losses.py": "import torch.nn.functional as F\n\ndef sce_loss(x, y, alpha=2):\n" + body,
        "train.py": (
            "from losses import sce_loss\n"
            "\n"
            "def fit(model, opt, loader):\n"
            "    for g, x, mask in loader:\n"
            "        pred = model(g, x)\n"
            f"        loss = {call}\n"
            "        opt.zero_grad()\n"
            "        loss.backward()\n"
            "        opt.step()\n"
        ),
    }


def test_custom_loss_given_the_prediction_hides_an_unnormalised_sum(tmp_path):
    files = _custom_loss("    return (1 - F.cosine_similarity(x, y)).pow(alpha).sum()\n")
    assert check(tmp_path, files, "GM401") == [("GM401", "losses.py", 4)]


def test_custom_loss_that_averages_is_clean(tmp_path):
    files = _custom_loss("    return (1 - F.cosine_similarity(x, y)).pow(alpha).mean()\n")
    assert check(tmp_path, files, "GM401") == []


def test_reduction_passed_down_as_a_keyword_parameter(tmp_path):
    body = "    return F.mse_loss(x, y, reduction=reduction)\n"
    files = _custom_loss(body, "sce_loss(pred[mask], x[mask], reduction='sum')")
    files["losses.py"] = files["losses.py"].replace("alpha=2", "reduction='mean'")
    assert check(tmp_path, files, "GM401") == [("GM401", "train.py", 6)]
    files = _custom_loss(body, "sce_loss(pred[mask], x[mask])")
    files["losses.py"] = files["losses.py"].replace("alpha=2", "reduction='mean'")
    assert check(tmp_path, files, "GM401") == []


def test_sum_over_a_fixed_size_matrix_is_not_a_node_count_sum(tmp_path):
    # CCA-SSG: the decorrelation term sums a d x d matrix; its size does not grow with the batch
    files = {"train.py": (
        "import torch\n"
        "\n"
        "def fit(model, opt, graph, feat, lambd, n):\n"
        "    for epoch in range(10):\n"
        "        z1, z2 = model(graph, feat)\n"
        "        c = torch.mm(z1.T, z2) / n\n"
        "        iden = torch.eye(c.shape[0])\n"
        "        loss_inv = -torch.diagonal(c).sum()\n"
        "        loss_dec = (iden - c).pow(2).sum()\n"
        "        loss = loss_inv + lambd * loss_dec\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )}
    assert check(tmp_path, files, "GM401") == []


# -- constants through configuration (GM402) -------------------------------------------------------

def _weighted(default: str) -> dict[str, str]:
    return {"train.py": (
        "import argparse\n"
        "\n"
        "def fit(model, opt, loader, args):\n"
        "    for g, x in loader:\n"
        "        rec, reg = model(g, x)\n"
        "        loss = rec + args.reg_weight * reg\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    parser = argparse.ArgumentParser()\n"
        f"    parser.add_argument('--reg_weight', type=float, default={default})\n"
        "    fit(None, None, [], parser.parse_args())\n"
    )}


def test_loss_weight_defaulting_to_zero_in_argparse(tmp_path):
    # reported where the zero is set: the argparse default
    assert check(tmp_path, _weighted("0.0"), "GM402") == [("GM402", "train.py", 13)]


def test_loss_weight_defaulting_to_a_positive_number_is_clean(tmp_path):
    assert check(tmp_path, _weighted("0.5"), "GM402") == []


def _dict_config(override: str) -> dict[str, str]:
    return {"train.py": (
        "DEFAULTS = {'w_rec': 1.0, 'w_reg': 0.1}\n"
        f"CONFIG = dict(DEFAULTS, w_reg={override})\n"
        "\n"
        "def fit(model, opt, loader):\n"
        "    cfg = CONFIG\n"
        "    for g, x in loader:\n"
        "        rec, reg = model(g, x)\n"
        "        loss = cfg['w_rec'] * rec + cfg.get('w_reg', 0.1) * reg\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )}


def test_weight_zeroed_by_dict_override(tmp_path):
    assert check(tmp_path, _dict_config("0.0"), "GM402") == [("GM402", "train.py", 8)]


def test_weight_kept_by_dict_override_is_clean(tmp_path):
    assert check(tmp_path, _dict_config("0.2"), "GM402") == []


def test_negated_log_likelihood_and_kl_factor_are_not_negative_weights(tmp_path):
    files = {"train.py": (
        "import torch\n"
        "\n"
        "def fit(model, opt, loader):\n"
        "    for g, x in loader:\n"
        "        mu, logvar, logp = model(g, x)\n"
        "        kl = -0.5 * torch.mean(torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=1))\n"
        "        nll = -1.0 * logp.mean()\n"
        "        loss = nll + kl\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )}
    assert check(tmp_path, files, "GM402") == []


# -- Python numbers are not graph-holding tensors (GM106) ----------------------------------------

def test_number_accumulation_is_not_a_graph(tmp_path):
    files = {"train.py": (
        "from sklearn.metrics import roc_auc_score\n"
        "\n"
        "def fit(model, opt, loader):\n"
        "    total, correct, auc, seen = 0.0, 0, 0.0, 0\n"
        "    for g, x, labels in loader:\n"
        "        logits = model(g, x)\n"
        "        loss = logits.sum()\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "        total += loss.item()\n"
        "        seen += labels.size(0)\n"
        "        correct += (logits.argmax(1) == labels).sum().item()\n"
        "        auc += roc_auc_score(labels.numpy(), logits.detach().numpy())\n"
        "    return total / seen, correct, auc\n"
    )}
    assert check(tmp_path, files, "GM106") == []


def test_loss_accumulated_with_its_graph_is_reported(tmp_path):
    files = {"train.py": (
        "def fit(model, opt, loader):\n"
        "    total = 0.0\n"
        "    for g, x in loader:\n"
        "        loss = model(g, x)\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "        total += loss\n"
        "    return total\n"
    )}
    assert check(tmp_path, files, "GM106") == [("GM106", "train.py", 8)]


# -- DGL data views are not Tensor.data (GM101) ----------------------------------------------------

def test_dgl_data_views_are_not_tensor_data(tmp_path):
    files = {"train.py": (
        "def fit(model, opt, g):\n"
        "    for epoch in range(10):\n"
        "        x = g.nodes['cell'].data['feat']\n"
        "        y = g.ndata['label']\n"
        "        w = g.edges['link'].data['w']\n"
        "        loss = (model(g, x, w) - y).pow(2).mean()\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )}
    assert check(tmp_path, files, "GM101") == []


def test_tensor_data_on_the_prediction_is_still_reported(tmp_path):
    files = {"train.py": (
        "import torch.nn.functional as F\n"
        "def fit(model, opt, g):\n"
        "    for epoch in range(10):\n"
        "        h = model(g, g.ndata['feat']).data\n"
        "        loss = F.mse_loss(h, g.ndata['feat'])\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )}
    assert check(tmp_path, files, "GM101") == [("GM101", "train.py", 4)]


# -- guards resolve (GM302) --------------------------------------------------------------------

def _ddp(ddp_guard: str) -> dict[str, str]:
    return {"train.py": (
        "import argparse\n"
        "import torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "\n"
        "def main(args, model):\n"
        "    if not args.standalone:\n"
        "        dist.init_process_group('nccl')\n"
        f"    {ddp_guard}\n"
        "        model = DDP(model)\n"
        "    return model\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--standalone', action='store_true')\n"
        "    main(parser.parse_args(), None)\n"
    )}


def test_ddp_guarded_by_the_flag_that_guards_the_process_group_is_clean(tmp_path):
    assert check(tmp_path, _ddp("if not args.standalone:"), "GM302") == []


def test_ddp_guarded_by_another_condition_than_the_process_group_is_reported(tmp_path):
    assert check(tmp_path, _ddp("if args.standalone:"), "GM302") == [("GM302", "train.py", 9)]


# -- an `else` arm is not its `if` arm (GM201) ---------------------------------------------------

def _mode_switch(restore: str) -> dict[str, str]:
    return {"train.py": (
        "def run(model, opt, loader, evaluate):\n"
        "    for epoch in range(10):\n"
        "        if evaluate:\n"
        "            model.eval()\n"
        f"{restore}"
        "        for g, x in loader:\n"
        "            loss = model(g, x)\n"
        "            opt.zero_grad()\n"
        "            loss.backward()\n"
        "            opt.step()\n"
    )}


def test_train_mode_restored_only_in_the_else_arm_leaks_eval_mode(tmp_path):
    # with `evaluate` set the `if` arm runs and the `else` arm's `.train()` does not
    restore = "        else:\n            model.train()\n"
    assert check(tmp_path, _mode_switch(restore), "GM201") == [("GM201", "train.py", 4)]


def test_train_mode_restored_in_the_same_arm_is_clean(tmp_path):
    restore = "            model.train()\n"
    assert check(tmp_path, _mode_switch(restore), "GM201") == []


# -- before / after the training loop is control flow (GM601, GM602) ------------------------------

def _restore(after: bool) -> dict[str, str]:
    load = "    model.load_state_dict(torch.load('best.pt', weights_only=True), strict=False)\n"
    loop = (
        "    for epoch in range(args.epochs):\n"
        "        loss = model(g, g.ndata['feat'])\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "        torch.save(model.state_dict(), 'best.pt')\n"
    )
    body = (loop + load) if after else (load + loop)
    return {"train.py": (
        "import torch\n"
        "\n"
        "def main(args, model, opt, g):\n"
        + body
        + "    return model\n"
    )}


def test_best_checkpoint_restored_after_training_is_not_a_load_before_training(tmp_path):
    assert check(tmp_path, _restore(after=True), "GM601") == []


def test_checkpoint_loaded_before_training_is_reported(tmp_path):
    assert check(tmp_path, _restore(after=False), "GM601") == [("GM601", "train.py", 4)]


def _lenient(state: str) -> dict[str, str]:
    """A model loaded with strict=False from ``state`` when asked (``--init``, off by default: a
    default warm start is another finding) and then trained."""
    return {"model.py": MODEL, "train.py": (
        "import torch\n"
        "from model import GraphMAE, Probe\n"
        "\n"
        "def main(g, path):\n"
        "    model = GraphMAE(8)\n"
        "    other = Probe(8)\n"
        f"    if path is not None: model.load_state_dict({state}, strict=False)\n"
        "    opt = torch.optim.Adam(model.parameters())\n"
        "    for epoch in range(3):\n"
        "        loss = model(g, g.ndata['feat'])\n"
        "        opt.zero_grad()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    import argparse\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--init', default=None)\n"
        "    main(None, parser.parse_args().init)\n"
    )}


def _gm601(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, int]]:
    """GM601's findings at every severity: (severity, line in train.py)."""
    for rel, text in files.items():
        (tmp_path / rel).write_text(text, encoding="utf-8")
    proc = run_cli("check", ".", "--format", "json", "--no-cache", "--exit-zero", "--select", "GM601",
                   cwd=tmp_path)
    return [(f["severity"], f["line"]) for f in json.loads(proc.stdout)["findings"]]


def test_strict_false_load_of_a_file_is_left_to_the_probe(tmp_path):
    # no static pass sees a checkpoint file's keys: reported, below warning, for the probe
    # to confirm (keys skipped) or refute (every key matched)
    assert _gm601(tmp_path, _lenient("torch.load(path, weights_only=True)")) == [("info", 7)]


def test_strict_false_warm_start_on_every_run_is_an_error(tmp_path):
    # loaded on every run before training: the run never starts from a fresh model, whatever
    # the keys (strict=False hides those it lacks on top)
    files = _lenient("torch.load(path, weights_only=True)")
    files["train.py"] = files["train.py"].replace("    if path is not None: model", "    model").replace(
        "main(None, parser.parse_args().init)", "main(None, 'pre.pt')")
    assert _gm601(tmp_path, files) == [("error", 7)]


@pytest.mark.parametrize("state", [
    "other.state_dict()",  # another class: its keys are not the model's
    "{k: v for k, v in torch.load(path, weights_only=True).items() if not k.endswith('bias')}",
])
def test_strict_false_load_whose_keys_differ_is_an_error(tmp_path, state):
    assert _gm601(tmp_path, _lenient(state)) == [("error", 7)]


# -- the trained model under other names: aliases, returns through calls, idle loops (GM601) ----

def _restored_alias(keys: str) -> dict[str, str]:
    """The best weights restored into ``eval_model``, the model itself or (under DDP) the module
    it wraps, then evaluated through ``self.model`` in another method."""
    return {"train.py": (
        "import copy\n"
        "import torch\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n"
        "\n"
        "class Trainer:\n"
        "    def __init__(self, model, loader):\n"
        "        self.model = model\n"
        "        self.loader = loader\n"
        "        self.opt = torch.optim.Adam(model.parameters())\n"
        "\n"
        "    @torch.no_grad()\n"
        "    def evaluate(self):\n"
        "        self.model.eval()\n"
        "        return [self.model(g) for g in self.loader]\n"
        "\n"
        "    def train(self, epochs):\n"
        "        eval_model = self.model.module if isinstance(self.model, DDP) else self.model\n"
        "        best = None\n"
        "        for epoch in range(epochs):\n"
        "            self.model.train()\n"
        "            for g in self.loader:\n"
        "                loss = self.model(g)\n"
        "                self.opt.zero_grad()\n"
        "                loss.backward()\n"
        "                self.opt.step()\n"
        "            best = copy.deepcopy(eval_model.state_dict())\n"
        f"        eval_model.load_state_dict({keys})\n"
        "        return self.evaluate()\n"
    )}


def test_best_weights_restored_into_a_ddp_alias_without_some_keys_are_reported(tmp_path):
    # `eval_model` is `self.model` (or the module it wraps): the evaluation through `self.model`
    # runs the partially restored weights
    found = _gm601(tmp_path, _restored_alias(
        "{k: v for k, v in best.items() if not k.endswith('bias')}, strict=False"))
    assert found == [("warning", 27)]  # a library class: no entry script of the tree runs it


def test_best_weights_restored_whole_into_a_ddp_alias_are_clean(tmp_path):
    assert _gm601(tmp_path, _restored_alias("best")) == []


def _pretrained(zero_epochs: bool, load: str = "net = load_pretrained('pre.pt')") -> dict[str, str]:
    """``load_pretrained`` returns what a second helper loaded (its biases dropped) and returned;
    the caller trains ``net`` (after the statements ``load``) for ``epochs`` epochs, none when
    ``zero_epochs``."""
    return {
        "ckpt.py": (
            "import torch\n"
            "import torch.nn as nn\n"
            "\n"
            "def download_and_load(path, model):\n"
            "    state = torch.load(path, weights_only=True)\n"
            "    model.load_state_dict({k: v for k, v in state.items() if 'bias' not in k}, strict=False)\n"
            "    return model\n"
            "\n"
            "def load_pretrained(path):\n"
            "    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))\n"
            "    return download_and_load(path, model)\n"
        ),
        "train.py": (
            "import torch\n"
            "import torch.nn as nn\n"
            "from ckpt import download_and_load, load_pretrained\n"
            "\n"
            "def main(args, loader):\n"
            + ("    args['epochs'] = 0\n" if zero_epochs else "")
            + "".join(f"    {line}\n" for line in load.split("; "))
            + "    opt = torch.optim.Adam(net.parameters())\n"
            "    for epoch in range(args['epochs']):\n"
            "        for x, y in loader:\n"
            "            loss = (net(x) - y).pow(2).mean()\n"
            "            opt.zero_grad()\n"
            "            loss.backward()\n"
            "            opt.step()\n"
            "    print([net(x) for x, _ in loader])\n"
        ),
    }


def _gm601_messages(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, int, str]]:
    for rel, text in files.items():
        (tmp_path / rel).write_text(text, encoding="utf-8")
    proc = run_cli("check", ".", "--format", "json", "--no-cache", "--exit-zero", "--select", "GM601",
                   cwd=tmp_path)
    return [(f["path"], f["line"], f["message"]) for f in json.loads(proc.stdout)["findings"]]


def test_partial_load_returned_through_two_calls_into_the_trained_model(tmp_path):
    [(path, line, message)] = _gm601_messages(tmp_path, _pretrained(zero_epochs=False))
    assert (path, line) == ("ckpt.py", 6) and "strict=False)` on the trained model" in message


def test_a_loop_over_zero_epochs_trains_nothing(tmp_path):
    # `args['epochs'] = 0` before it: the loop never runs, the partially loaded model is only
    # evaluated (a partial load into a module the pipeline runs untrained)
    [(path, line, message)] = _gm601_messages(tmp_path, _pretrained(
        zero_epochs=True, load="net = nn.Linear(4, 2); download_and_load('pre.pt', net)"))
    assert (path, line) == ("ckpt.py", 6) and "without being trained" in message


# -- seeding: order and reach (GM603) ------------------------------------------------------------

SEEDED = "import random\nimport numpy as np\nimport torch\n"


def test_seed_two_lines_above_a_draw(tmp_path):
    files = {"train.py": SEEDED + (
        "\n"
        "def main(seed, items):\n"
        "    torch.manual_seed(seed)\n"
        "    random.seed(seed)\n"
        "    np.random.seed(seed)\n"
        "    random.shuffle(items)\n"
        "    return np.random.permutation(len(items))\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    main(0, [1, 2])\n"
    )}
    assert check(tmp_path, files, "GM603") == []


def test_module_level_seeding_covers_the_functions(tmp_path):
    files = {"train.py": SEEDED + (
        "random.seed(0)\nnp.random.seed(0)\ntorch.manual_seed(0)\n"
        "\n"
        "def mask(n):\n"
        "    return random.sample(range(n), n // 2), np.random.rand(n)\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    mask(10)\n"
    )}
    assert check(tmp_path, files, "GM603") == []


def test_seeding_through_a_reexport(tmp_path):
    files = {
        "utils/__init__.py": "from .seeding import set_seed\n",
        "utils/seeding.py": SEEDED + (
            "\ndef set_seed(s):\n    random.seed(s)\n    np.random.seed(s)\n    torch.manual_seed(s)\n"),
        "train.py": SEEDED + (
            "from utils import set_seed\n"
            "\n"
            "def main():\n"
            "    set_seed(0)\n"
            "    return random.random(), np.random.rand(3), torch.rand(3)\n"
            "\n"
            "if __name__ == '__main__':\n"
            "    main()\n"
        ),
    }
    assert check(tmp_path, files, "GM603") == []


def test_one_rng_left_unseeded_is_reported(tmp_path):
    files = {"train.py": SEEDED + (
        "\n"
        "def main(items):\n"
        "    torch.manual_seed(0)\n"
        "    np.random.seed(0)\n"
        "    random.shuffle(items)\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    main([1, 2])\n"
    )}
    # at the seeding that leaves `random` out
    assert check(tmp_path, files, "GM603") == [("GM603", "train.py", 6)]


# -- constant flags through configuration (GM604) ------------------------------------------------

@pytest.mark.parametrize("default, reported", [("False", False), ("True", True)])
def test_benchmark_flag_from_cfg_get(tmp_path, default, reported):
    files = {"train.py": (
        "import torch\n"
        "\n"
        "def main(cfg):\n"
        "    torch.manual_seed(0)\n"
        f"    torch.backends.cudnn.benchmark = cfg.get('benchmark', {default})\n"
        "\n"
        "if __name__ == '__main__':\n"
        "    main({'lr': 0.1})\n"
    )}
    expected = [("GM604", "train.py", 5)] if reported else []
    assert check(tmp_path, files, "GM604") == expected


# -- numbers made by arithmetic on calls that give numbers (GM106) -----------------------------

@pytest.mark.parametrize("body", [
    # `acc = (...).item(); acc = acc / len(targets)`: a float
    "    acc = (scores.argmax(1) == targets).float().sum().item()\n    acc = acc / len(targets)\n",
    # numpy arithmetic: `100. * np.sum(hits) / float(n)`
    "    hits = (scores.argmax(1) == targets).cpu().numpy()\n"
    "    acc = 100. * np.sum(hits) / float(len(targets))\n",
])
def test_an_accuracy_helper_returning_a_number_is_no_graph(tmp_path, body):
    # a list of such accuracies keeps no graph; the list of losses beside it does
    files = {
        "metrics.py": "import numpy as np\n\n\ndef accuracy(scores, targets):\n" + body
                      + "    return acc\n",
        "train.py": "import torch\nfrom metrics import accuracy\n\n"
                    "def step(model, opt, x, y):\n"
                    "    out = model(x)\n"
                    "    loss = torch.nn.functional.cross_entropy(out, y)\n"
                    "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"
                    "    return loss, accuracy(out, y)\n\n"
                    "if __name__ == '__main__':\n"
                    "    model = torch.nn.Linear(3, 2)\n"
                    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                    "    losses, accs = [], []\n"
                    "    for _ in range(3):\n"
                    "        loss, acc = step(model, opt, torch.randn(4, 3), torch.tensor([0, 1, 0, 1]))\n"
                    "        accs.append(acc)\n"
                    "        losses.append(loss)\n",
    }
    found = check(tmp_path, files, "GM106")
    # the list of losses keeps every step's graph; the list of accuracies keeps floats
    assert [(rule, line) for rule, _, line in found] == [("GM106", 19)], found
