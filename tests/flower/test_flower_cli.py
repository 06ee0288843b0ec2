"""``python -m asyncfl flower``: bad input is one clear message naming the flag or YAML path (exit 2, no
traceback), flwr missing is one line with the install command, and a Flower run directory reads, plots and
compares like a native one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("flwr")

import toy_app  # noqa: E402,F401  (tests/flower is on sys.path; imported so the apps are found in-process)

import asyncfl  # noqa: E402
from asyncfl.cli.main import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SCENARIO = """\
name: toy
data: {clients: 4}
output: {plot: false}
flower:
  run_config: {num-server-rounds: 2}
"""


def _scenario(tmp_path: Path, text: str = SCENARIO) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


def flower_cli(tmp_path: Path, *args: str) -> list[str]:
    return ["flower", str(_scenario(tmp_path)), "--quiet", "--out", str(tmp_path / "run"), *args]


BAD_APPS = [
    (["--server-app", "no_such_module_here:app"], "--server-app: cannot import module 'no_such_module_here'"),
    (["--server-app", "toy_app:missing"], "--server-app: module 'toy_app' has no attribute 'missing'"),
    (["--server-app", "toy_app:client_app"], "is of type ClientApp, not a flwr.serverapp.ServerApp"),
    (["--server-app", "toy_app"], "--server-app: 'toy_app' is not a 'package.module:attribute' string"),
    (["--client-app", "toy_app:server_app"], "--client-app: 'toy_app:server_app' is of type ServerApp"),
]


@pytest.mark.parametrize(
    "flags, message", BAD_APPS, ids=[m.split(":")[0] + str(i) for i, (_, m) in enumerate(BAD_APPS)]
)
def test_a_bad_app_is_one_clear_error(tmp_path, capsys, flags, message):
    apps = {"--server-app": "toy_app:server_app", "--client-app": "toy_app:client_app"}
    apps.update(dict(zip(flags[::2], flags[1::2])))
    assert main(flower_cli(tmp_path, *[x for pair in apps.items() for x in pair])) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "allowed" in err, err
    assert not (tmp_path / "run").exists()  # nothing was made


def test_the_yaml_names_the_apps_and_its_errors_name_the_yaml_path(tmp_path, capsys):
    text = SCENARIO + "  server_app: toy_app:server_app\n  client_app: toy_app\n"
    assert main(["flower", str(_scenario(tmp_path, text)), "--quiet"]) == 2
    assert "flower.client_app: 'toy_app' is not a 'package.module:attribute'" in capsys.readouterr().err
    assert main(["flower", str(_scenario(tmp_path)), "--quiet", "--client-app", "toy_app:client_app"]) == 2
    assert "flower.server_app: no ServerApp is named" in capsys.readouterr().err


def test_a_flower_run_directory_reads_plots_and_compares_like_a_native_one(tmp_path, capsys):
    args = flower_cli(tmp_path, "--server-app", "toy_app:server_app", "--client-app", "toy_app:client_app")
    assert main(args) == 0
    run_dir = tmp_path / "run"
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(run_dir)
    run = asyncfl.read_run(run_dir)
    assert run.status == "finished" and run.summary["rounds"] == 2
    assert run.summary["algorithm"] == "flower ServerApp toy_app:server_app"  # its strategy, not algorithm.name's
    assert list(run.rounds["round"]) == [1, 2] and len(run.updates) == 8 and len(run.clients) == 4
    assert run.metrics["test_accuracy"].iloc[1:].notna().all()
    assert run.config["flower"]["server_app"] == "toy_app:server_app"
    assert main(["plot", str(run_dir)]) == 0
    assert (run_dir / "accuracy_vs_time.png").is_file() and (run_dir / "timeline.png").is_file()
    assert main(["compare", str(run_dir), str(run_dir), "--out", str(tmp_path / "compare")]) == 0
    assert any((tmp_path / "compare").iterdir())


def test_resuming_a_flower_run_is_refused(tmp_path, capsys):
    args = flower_cli(tmp_path, "--server-app", "toy_app:server_app", "--client-app", "toy_app:client_app")
    assert main(args) == 0
    (tmp_path / "run" / "summary.json").unlink()  # as if it had been killed
    capsys.readouterr()
    assert main(["run", "--resume", str(tmp_path / "run")]) == 2
    assert "a Flower run" in capsys.readouterr().err


NO_FLWR = "import sys\nsys.modules['flwr'] = None  # import flwr fails\nfrom asyncfl.cli import main\nsys.exit(main())"


def test_flwr_missing_is_one_line_with_the_install_command(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    command = [sys.executable, "-c", NO_FLWR, *flower_cli(tmp_path, "--server-app", "toy_app:server_app")]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        "error: Flower (flwr) is not installed; install it with: pip install 'flwr>=1.42,<2' "
        "(or, in a checkout of asyncfl: pip install -e '.[flower]')"
    ]
