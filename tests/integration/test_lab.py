"""`make lab` starts JupyterLab on the project's environment: list the notebooks through the REST API, run a cell
in a kernel, shut everything down. Loopback only."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from jupyter_client import BlockingKernelClient
from jupyter_core.paths import jupyter_runtime_dir

import toporag_lib

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "toporag-test"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(port: int, path: str, method: str = "GET", body: dict | None = None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Authorization": f"token {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read()
    return json.loads(text) if text else None


def wait_for_server(port: int, process: subprocess.Popen, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"make lab exited with {process.returncode}")
        try:
            api(port, "/api/status")
            return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError("JupyterLab did not answer")


def execute(kernel_id: str, code: str) -> str:
    """Run `code` in the server's kernel through its connection file; return what it printed."""
    client = BlockingKernelClient(connection_file=str(Path(jupyter_runtime_dir()) / f"kernel-{kernel_id}.json"))
    client.load_connection_file()
    client.start_channels()
    outputs: list[dict] = []
    try:
        client.wait_for_ready(timeout=60)
        reply = client.execute_interactive(code, timeout=60, output_hook=outputs.append)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        client.stop_channels()
    return "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")


def test_make_lab_serves_the_notebooks_and_runs_a_cell_in_the_project_environment():
    port = free_port()
    args = f"--no-browser --ip=127.0.0.1 --port={port} --ServerApp.token={TOKEN} --ServerApp.port_retries=0"
    process = subprocess.Popen(["make", "-s", "lab", f"LAB_ARGS={args}"], cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True, env=os.environ.copy())
    try:
        wait_for_server(port, process)
        listing = api(port, "/api/contents")
        names = {item["name"] for item in listing["content"]}
        assert {"01_datasets.ipynb", "02_cell_lifting.ipynb", "08_explorer.ipynb"} <= names
        kernel = api(port, "/api/kernels", "POST", {"name": "python3"})
        text = execute(kernel["id"], "import sys, ipywidgets, toporag_lib; print(sys.prefix); "
                                     "print(toporag_lib.__version__); print(ipywidgets.IntText(1).value + 1)")
        assert sys.prefix in text  # the kernel runs in the project's environment
        assert toporag_lib.__version__ in text
        assert "2" in text.split()  # the explorer's widgets (notebook 08) run in that kernel
        api(port, f"/api/kernels/{kernel['id']}", "DELETE")
        api(port, "/api/shutdown", "POST")
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
