"""Every notebook in ``notebooks/`` runs top to bottom, offline, without a cell error.

The cells assert the facts they show, so a regression in the package fails its notebook here.
Each notebook runs in a fresh kernel whose working directory is a temporary folder; the kernel
sees the repository first on ``PYTHONPATH``, no ``MNEMON_*`` settings and no network switches.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_notebooks_exist() -> None:
    assert NOTEBOOKS, "notebooks/ has no .ipynb file"


def test_notebooks_are_stored_without_outputs() -> None:
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.get("outputs"), f"{path.name}: clear outputs before saving"
                assert cell.get("execution_count") is None, f"{path.name}: clear execution counts"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("MNEMON_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    monkeypatch.setenv("LANGCHAIN_TRACING_V2", "false")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for folder in ("home", "tmp"):
        (tmp_path / folder).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # nothing may land in the real home
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))  # the notebooks' mkdtemp() roots
    python_path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(REPO) + (os.pathsep + python_path if python_path else ""))
    workdir = tmp_path / "cwd"
    workdir.mkdir()

    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
    )
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as exc:
        pytest.fail(f"{path.name} failed:\n{exc}", pytrace=False)
    errors = [
        output
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors, f"{path.name}: {errors}"
    assert not list(workdir.iterdir()), f"{path.name} wrote into its working directory"
    assert list((tmp_path / "tmp").glob("mnemon-*")), f"{path.name} made no temporary root"
