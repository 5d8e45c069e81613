"""``gm-audit server`` through a real LSP session: the server runs as the editor would start it,
and this file speaks JSON-RPC to it over its stdin/stdout with a framing of its own (not pygls'),
so a message the protocol does not allow fails here as it would in an editor."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

from test_cli_check import write

DISK = "import torch\n"
# what the editor holds, unsaved: the buffer is checked, not the file
BUFFER = 'import torch\n\nstate = torch.load("w.pt")  # é: columns are UTF-16 units\n'


class Session:
    """An LSP client: Content-Length framing, requests with ids, notifications collected."""

    def __init__(self, cwd: Path) -> None:
        env = {**os.environ}
        env.pop("GM_AUDIT_DEBUG", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "auditor", "server"], cwd=cwd,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.inbox: "queue.Queue[Optional[dict]]" = queue.Queue()
        self.ids = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            headers = {}
            while (line := out.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("ascii").partition(":")
                headers[name.strip().lower()] = value.strip()
            if "content-length" not in headers:
                self.inbox.put(None)  # end of stream
                return
            self.inbox.put(json.loads(out.read(int(headers["content-length"]))))

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.proc.stdin.flush()

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any) -> Any:
        self.ids += 1
        sent = self.ids
        self.send({"id": sent, "method": method, "params": params})
        reply = self.wait(lambda m: m.get("id") == sent and "method" not in m)
        assert "error" not in reply, reply
        return reply["result"]

    def wait(self, match: Callable[[dict], bool], timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            message = self.inbox.get(timeout=max(deadline - time.monotonic(), 0.01))
            assert message is not None, "the server closed its output"
            if match(message):
                return message

    def diagnostics(self, uri: str, version: int) -> list[dict]:
        return self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                         and m["params"]["uri"] == uri
                         and m["params"].get("version") == version)["params"]["diagnostics"]


def apply(text: str, edits: list[dict]) -> str:
    """``edits`` (whole-line ranges, as the server makes them) applied to ``text``."""
    lines = text.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: e["range"]["start"]["line"], reverse=True):
        start, end = edit["range"]["start"], edit["range"]["end"]
        assert start["character"] == 0 and end["character"] == 0
        lines[start["line"]:end["line"]] = [edit["newText"]]
    return "".join(lines)


def test_language_server_session(tmp_path):
    write(tmp_path, "pyproject.toml", """\
        [tool.gm-audit]
        per-file-ignores = {"tests/*" = ["GM602"]}
    """)
    write(tmp_path, "src/train.py", DISK)
    write(tmp_path, "tests/t.py", DISK)
    uri = (tmp_path / "src" / "train.py").resolve().as_uri()
    ignored_uri = (tmp_path / "tests" / "t.py").resolve().as_uri()
    lsp = Session(cwd=tmp_path / "src")  # started anywhere: the project is found from the file
    try:
        init = lsp.request("initialize", {"processId": os.getpid(), "rootUri": None,
                                          "capabilities": {}, "workspaceFolders": None})
        assert init["serverInfo"]["name"] == "gm-audit"
        assert init["capabilities"]["codeActionProvider"]
        lsp.notify("initialized", {})
        lsp.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": BUFFER}})
        (diag,) = lsp.diagnostics(uri, 1)
        assert diag["code"] == "GM602" and diag["source"] == "gm-audit"
        assert diag["range"] == {"start": {"line": 2, "character": 8},
                                 "end": {"line": 2, "character": 26}}
        # the config of the project applies: per-file-ignores of tests/
        lsp.notify("textDocument/didOpen", {"textDocument": {
            "uri": ignored_uri, "languageId": "python", "version": 1, "text": BUFFER}})
        assert lsp.diagnostics(ignored_uri, 1) == []

        actions = lsp.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": diag["range"],
            "context": {"diagnostics": [diag]}})
        titles = {a["title"]: a for a in actions}
        noqa = titles["Disable GM602 for this line"]["edit"]["changes"][uri]
        assert apply(BUFFER, noqa).splitlines()[2] == (
            'state = torch.load("w.pt")  # é: columns are UTF-16 units  # noqa: GM602')
        (fix,) = [a for t, a in titles.items() if t.startswith("Fix GM602")]
        assert fix["kind"] == "quickfix" and fix["isPreferred"]
        fixed = apply(BUFFER, fix["edit"]["changes"][uri])
        assert 'torch.load("w.pt", weights_only=True)' in fixed
        assert (tmp_path / "src" / "train.py").read_text() == DISK  # an action writes nothing
        fix_all = lsp.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": diag["range"],
            "context": {"diagnostics": [], "only": ["source.fixAll"]}})
        assert [a["kind"] for a in fix_all] == ["source.fixAll.gm-audit"]

        # the user takes the fix and saves: the file is clean
        lsp.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{"text": fixed}]})
        (tmp_path / "src" / "train.py").write_text(fixed)
        lsp.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        assert lsp.diagnostics(uri, 2) == []

        assert lsp.request("shutdown", None) is None
        lsp.notify("exit", None)
        assert lsp.proc.wait(timeout=10) == 0
    finally:
        if lsp.proc.poll() is None:
            lsp.proc.kill()
        lsp.proc.wait()
    assert lsp.proc.stderr is not None and b"Traceback" not in lsp.proc.stderr.read()
