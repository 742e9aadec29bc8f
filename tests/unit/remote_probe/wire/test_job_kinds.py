"""Servers and kernels are told from jobs by the program a process runs, never by its
arguments (a walk-through found `preprocess.py --report_to tensorboard` hidden from the
checklist and the Jobs panel)."""

import pytest

from remote_probe.wire.job_kinds import is_kernel, is_service, program

SERVICES = [
    "/opt/conda/bin/python /opt/conda/bin/jupyter-lab --allow-root",
    "/usr/bin/python3 /usr/local/bin/jupyter-notebook --port 8888",
    "python -m jupyterlab --no-browser",
    "python -m notebook",
    "python3 -X utf8 -m tensorboard.main --logdir runs",
    "/usr/bin/python3 /usr/local/bin/tensorboard --logdir /root/autodl-tmp/runs",
    "/opt/conda/bin/python /opt/conda/bin/jupyter lab --ip 0.0.0.0",
    "/opt/conda/bin/python -m wandb service --port-fname /tmp/x",
    "/usr/bin/python3 /usr/bin/supervisord -n",
    "/usr/bin/python3 /root/.vscode-server/extensions/ms-python.python-2026.1/python_files/lsp_server.py",
    "/usr/bin/python3 /home/u/.cursor-server/extensions/x/run.py",
]
JOBS = [
    "python3 preprocess.py --report_to tensorboard",
    "python train.py --logging_dir runs/tensorboard",
    "python3 notebook.py",                      # the user's own script, whatever its name
    "python3 tensorboard.py --export",
    "python /root/jupyterlab-notes/train.py",
    "python -m torch.distributed.run --nproc_per_node 8 train.py",
    "python -c import time; time.sleep(600) # jupyter-lab",
    "/opt/conda/bin/python -W ignore finetune.py --wandb service",
    "torchrun --nproc_per_node 8 train.py --report_to tensorboard",
]
KERNELS = [
    "python -m ipykernel_launcher -f /root/.local/share/jupyter/runtime/k.json",
    "/opt/conda/bin/python -m ipykernel -f k.json",
    "/usr/bin/python3 /usr/local/bin/ipython kernel -f k.json",
]


@pytest.mark.parametrize("cmd", SERVICES)
def test_servers_are_services(cmd):
    assert is_service(cmd) and not is_kernel(cmd)


@pytest.mark.parametrize("cmd", JOBS)
def test_jobs_are_jobs_whatever_their_arguments_say(cmd):
    assert not is_service(cmd) and not is_kernel(cmd)


@pytest.mark.parametrize("cmd", KERNELS)
def test_kernels_are_kernels(cmd):
    assert is_kernel(cmd) and not is_service(cmd)


def test_program_of_odd_command_lines():
    assert program("") == ("", "", "")
    assert program(None) == ("", "", "")
    assert program("python3") == ("python3", "python3", "")
    assert program("python3 -u -W ignore train.py --x") == ("train.py", "train", "--x")
    assert program("python -m") == ("python", "python", "")
