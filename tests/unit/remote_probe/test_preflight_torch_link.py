"""Doctor's torch script with its interconnect bench (issue 22), run against a stand-in `torch`
module: the real bench needs CUDA GPUs; this runs every line of the script and checks what it
reports (the figures themselves come from the stand-in's clock, not from hardware)."""

import sys
import textwrap

import pytest

from remote_probe import preflight_facts as preflight

FAKE_TORCH = textwrap.dedent('''
    import sys, time, types
    __version__ = "2.5.1+cu124"
    version = types.SimpleNamespace(cuda="12.4")
    uint8, float32, bfloat16, float16 = "torch.uint8", "torch.float32", "torch.bfloat16", "torch.float16"
    N = int(__import__("os").environ.get("FAKE_GPUS", "2"))
    BUSY = __import__("os").environ.get("FAKE_BUSY") == "1"

    class T:
        def __init__(self, size=0, device=None):
            self.size, self.device = size, device
        def __matmul__(self, other):
            return self
        def pin_memory(self):
            return self
        def copy_(self, src, non_blocking=False):
            time.sleep(0.0005)
            return self

    def device(kind, i=0):
        return (kind, i)
    def randn(*shape, device=None, dtype=None):
        return T(device=device)
    def empty(size, dtype=None, device=None):
        return T(size, device)
    def ones(size, dtype=None, device=None):
        return T(size, device)

    class _Props:
        total_memory = 80e9
    class _Nccl:
        @staticmethod
        def all_reduce(bufs):
            time.sleep(0.001)
    cuda = types.ModuleType("torch.cuda")
    cuda.is_available = lambda: True
    cuda.device_count = lambda: N
    cuda.get_device_name = lambda i: "NVIDIA H100 80GB HBM3"
    cuda.is_bf16_supported = lambda: True
    cuda.get_device_properties = lambda i: _Props()
    cuda.mem_get_info = lambda i: ((10e9 if BUSY else 79e9), 80e9)
    cuda.synchronize = lambda d=None: None
    cuda.empty_cache = lambda: None
    cuda.nccl = _Nccl()
    sys.modules["torch.cuda"] = cuda
    sys.modules["torch.cuda.nccl"] = cuda.nccl
''')


@pytest.fixture
def fake_torch(tmp_path, monkeypatch):
    pkg = tmp_path / "torch"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(FAKE_TORCH)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return monkeypatch


def test_the_bench_reports_copies_and_an_all_reduce(fake_torch):
    fake_torch.setenv("FAKE_GPUS", "3")
    out = preflight.torch_facts(sys.executable, smoke=True, timeout=60)
    assert out["torch"] == "2.5.1+cu124" and len(out["smoke"]) == 3, out
    link = out["link"]
    assert link["idle"] is True and "error" not in link, link
    assert [m["gpu"] for m in link["h2d"]] == [0, 1, 2] and all(m["gbps"] > 0 for m in link["h2d"])
    assert [(m["a"], m["b"]) for m in link["d2d"]] == [(0, 1), (0, 2), (1, 2)]
    assert link["allreduce"]["gpus"] == 3 and link["allreduce"]["busbw_gbps"] > 0


def test_busy_gpus_are_not_benched(fake_torch):
    fake_torch.setenv("FAKE_BUSY", "1")
    link = preflight.torch_facts(sys.executable, smoke=True, timeout=60)["link"]
    assert link == {"idle": False}


def test_one_gpu_has_no_all_reduce(fake_torch):
    fake_torch.setenv("FAKE_GPUS", "1")
    link = preflight.torch_facts(sys.executable, smoke=True, timeout=60)["link"]
    assert len(link["h2d"]) == 1 and link["d2d"] == [] and "allreduce" not in link


def test_no_smoke_no_bench(fake_torch):
    assert preflight.torch_facts(sys.executable, smoke=False, timeout=60)["link"] == {}
