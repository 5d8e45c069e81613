"""The project graph resolves calls the way Python imports them."""

from auditor.registry import all_rules
from auditor.testing import check_code

NAMESPACE_LAYOUT = {
    # no __init__.py: `graphmae` is an implicit namespace package to a script at the root
    "graphmae/evaluation.py": (
        "def evaluate(model, loader):\n"
        "    model.eval()\n"
        "    for g in loader:\n"
        "        model(g)\n"
    ),
    "main.py": (
        "from graphmae.evaluation import evaluate\n"
        "\n"
        "def train(model, opt, loader):\n"
        "    for epoch in range(3):\n"
        "        for g in loader:\n"
        "            loss = model(g)\n"
        "            opt.zero_grad()\n"
        "            loss.backward()\n"
        "            opt.step()\n"
        "        evaluate(model, loader)\n"
    ),
}


def test_imports_through_a_namespace_package_resolve():
    result = check_code(NAMESPACE_LAYOUT, [all_rules()["GM201"]])
    assert [(f.rule, f.path, f.line) for f in result.findings] == [
        ("GM201", "graphmae/evaluation.py", 2)
    ]
    project = result.project
    assert "graphmae.evaluation.evaluate" in project.callees("main.train")


def test_script_style_imports_still_resolve():
    # the same helper imported the way a script inside the folder does it
    files = {
        "graphmae/evaluation.py": NAMESPACE_LAYOUT["graphmae/evaluation.py"],
        "graphmae/main.py": NAMESPACE_LAYOUT["main.py"].replace(
            "from graphmae.evaluation import", "from evaluation import"),
    }
    result = check_code(files, [all_rules()["GM201"]])
    assert [(f.path, f.line) for f in result.findings] == [("graphmae/evaluation.py", 2)]


def test_mutually_recursive_returns_do_not_exhaust_the_stack():
    # `return` chains that call each other forever: every rule must still answer
    code = (
        "def a(x):\n    return b(x)\n\n"
        "def b(x):\n    return a(x)\n\n"
        "def train(model, opt, loader):\n"
        "    net = a(model)\n"
        "    for g in loader:\n"
        "        loss = net(g)\n"
        "        loss.backward()\n"
        "        opt.step()\n"
    )
    result = check_code(code, list(all_rules().values()))
    assert result.errors == []
    assert any(f.rule == "GM104" for f in result.findings)  # no zero_grad in the loop


def test_a_local_named_like_an_imported_module_is_not_that_module():
    # `from model import BGRL` binds BGRL, not `model`: the training function's parameter
    # `model` is the BGRL instance its caller passes, and the detach inside BGRL reaches the loss
    # (in a folder, where the module `model` is `src.model`)
    files = {
        "src/model.py": (
            "import torch.nn as nn\n"
            "\n"
            "class BGRL(nn.Module):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.encoder, self.predictor = nn.Linear(4, 4), nn.Linear(4, 4)\n"
            "\n"
            "    def forward(self, x):\n"
            "        y = self.encoder(x)\n"
            "        y = y.detach()\n"
            "        return self.predictor(y)\n"
        ),
        "src/main.py": (
            "import torch\n"
            "from model import BGRL\n"
            "\n"
            "def train(model, optimizer, x):\n"
            "    loss = model(x).pow(2).mean()\n"
            "    loss.backward()\n"
            "    optimizer.step()\n"
            "\n"
            "if __name__ == '__main__':\n"
            "    net = BGRL()\n"
            "    opt = torch.optim.Adam(net.parameters())\n"
            "    for step in range(3):\n"
            "        train(net, opt, torch.randn(2, 4))\n"
        ),
    }
    result = check_code(files, [all_rules()["GM101"]])
    assert [(f.rule, f.path, f.line) for f in result.findings] == [("GM101", "src/model.py", 10)]
    train = result.project.function("src.main.train")
    assert [e.func for e in train.events if e.kind == "call" and e.func.startswith("model")] == [
        "model().pow().mean", "model().pow", "model"]
