"""Preflight verdicts for a freshly rented box: plain functions over recorded facts.

Each check gives pass / warn / fail and one line. The facts come from the probe
(`remote_probe.preflight.collect` plus the GPU inventory); the config says what was rented.
"""

import dataclasses
import re
from typing import List, Optional

from tui.core.i18n import _, ngettext

PASS, WARN, FAIL = "pass", "warn", "fail"
ORDER = {PASS: 0, WARN: 1, FAIL: 2}

# name pattern -> (nominal total MiB as NVML reports it, dense bf16/fp16 tensor TFLOPS)
GPU_SPECS = (
    (r"H200", 143771, 989),
    (r"H100.*PCIe", 81559, 756),
    (r"H100|H800", 81559, 989),
    (r"A100.*80GB|A800.*80GB", 81920, 312),
    (r"A100|A800", 40960, 312),
    (r"L40S", 46068, 362),
    (r"L40\b|A40\b", 46068, 150),
    (r"L4\b", 23034, 121),
    (r"A10\b|A10G", 23028, 125),
    (r"RTX 6000 Ada", 49140, 364),
    (r"A6000", 49140, 155),
    (r"4090", 24564, 165),
    (r"3090", 24576, 71),
    (r"V100.*32GB", 32768, 125),
    (r"V100", 16384, 125),
    (r"T4\b", 15360, 65),
)
DATACENTER = re.compile(r"H200|H100|H800|A100|A800|L40|A40|L4\b|A10|V100|T4\b")


@dataclasses.dataclass
class Check:
    name: str
    verdict: str
    reason: str


def spec_for(name):
    for pattern, mem, tflops in GPU_SPECS:
        if name and re.search(pattern, name):
            return {"mem_total": mem, "tflops": tflops}
    return None


def worst(checks):
    return max((c.verdict for c in checks), key=ORDER.get, default=PASS)


def exit_code(checks):
    return ORDER[worst(checks)]


def _cuda_tuple(text):
    m = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def check_gpus(inv, rented: Optional[int]) -> List[Check]:
    gpus = inv.get("gpus") or []
    out = []
    if not gpus:
        return [Check("GPU", FAIL, _("no NVIDIA GPU: %s") % (inv.get("reason") or _("none found")))]
    if rented is not None:
        out.append(Check(_("GPU count"), PASS if len(gpus) == rented else FAIL,
                         ngettext("%d GPU, as rented", "%d GPUs, as rented", len(gpus)) % len(gpus)
                         if len(gpus) == rented else
                         ngettext("%d GPU visible but %d were rented", "%d GPUs visible but %d were rented",
                                  len(gpus)) % (len(gpus), rented)))
    for g in gpus:
        label = "GPU %s %s" % (g.get("index"), g.get("name"))
        spec = spec_for(g.get("name"))
        if g.get("mig_mode") == 1:
            slices = g.get("mig_devices") or []
            out.append(Check(label, FAIL, ngettext("MIG is on: this is a slice, not a whole card (%d slice: %s)",
                                                   "MIG is on: this is a slice, not a whole card (%d slices: %s)",
                                                   len(slices))
                             % (len(slices), ", ".join(s.get("name") or "?" for s in slices) or _("none visible"))))
        elif g.get("virt_mode") == "vgpu":
            out.append(Check(label, FAIL, _("virtualization mode vGPU: a virtual slice of a card, "
                                           "not a whole GPU")))
        elif spec and g.get("mem_total") and g["mem_total"] < 0.9 * spec["mem_total"]:
            out.append(Check(label, FAIL, _("%d MiB of VRAM where a %s has %d: a slice or a smaller "
                                           "variant") % (g["mem_total"], g.get("name"), spec["mem_total"])))
        elif spec:
            out.append(Check(label, PASS, _("%d MiB VRAM, a whole card") % g["mem_total"]))
        else:
            out.append(Check(label, PASS, _("%s MiB VRAM (model not in gputui's table)") % g.get("mem_total")))
    return out


def check_torch(inv, torch) -> List[Check]:
    out = []
    if torch.get("error"):
        return [Check(_("training python"), WARN, torch["error"])]
    py = torch.get("python_path")
    if not torch.get("torch"):
        return [Check("torch", WARN, _("no torch in %s (%s)") % (py, torch.get("torch_error", _("not installed"))))]
    version = torch["torch"]
    gpus = inv.get("gpus") or []
    if "+cpu" in version or (torch.get("torch_cuda") is None and gpus):
        out.append(Check(_("torch build"), FAIL, _("torch %s in %s is a CPU-only build: reinstall the CUDA "
                         "wheel (pip install torch --index-url .../whl/cu1XX)") % (version, py)))
    else:
        out.append(Check(_("torch build"), PASS, "torch %s, CUDA %s" % (version, torch.get("torch_cuda"))))
    need, have = _cuda_tuple(torch.get("torch_cuda")), _cuda_tuple(inv.get("cuda_driver"))
    if need and have:
        if need[0] > have[0]:
            out.append(Check(_("CUDA vs driver"), FAIL, _("torch needs CUDA %s but driver %s supports %s: "
                             "install a torch built for CUDA %d.x or get a newer driver")
                             % (torch["torch_cuda"], inv.get("driver"), inv["cuda_driver"], have[0])))
        elif need > have:
            out.append(Check(_("CUDA vs driver"), WARN, _("torch built for CUDA %s, driver supports %s: works "
                             "through minor-version compatibility, JIT-compiled kernels may not")
                             % (torch["torch_cuda"], inv["cuda_driver"])))
        else:
            out.append(Check(_("CUDA vs driver"), PASS, _("driver %s supports CUDA %s >= torch's %s")
                             % (inv.get("driver"), inv["cuda_driver"], torch["torch_cuda"])))
    if gpus:
        ok = torch.get("cuda_available")
        out.append(Check("torch.cuda.is_available()", PASS if ok else FAIL,
                         _("%d device(s) visible to torch") % torch.get("device_count", 0) if ok else
                         "False: %s" % (torch.get("cuda_error") or _("torch cannot use the GPU"))))
    return out


def check_visible_devices(inv, value) -> List[Check]:
    if value is None:
        return [Check("CUDA_VISIBLE_DEVICES", PASS, _("not set: every GPU is visible"))]
    gpus = inv.get("gpus") or []
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        return [Check("CUDA_VISIBLE_DEVICES", FAIL, _("set but empty: CUDA sees no GPU at all"))]
    uuids = {g.get("uuid") for g in gpus}
    bad = [v for v in items if not ((v.isdigit() and int(v) < len(gpus)) or v in uuids
                                    or any(u and u.startswith(v) for u in uuids))]
    if bad:
        return [Check("CUDA_VISIBLE_DEVICES", FAIL, _("%r names devices that do not exist here (%s)")
                      % (value, ", ".join(bad)))]
    return [Check("CUDA_VISIBLE_DEVICES", PASS, "%r" % value)]


def check_smoke(inv, torch, sample_gpus=None) -> List[Check]:
    out = []
    static = {g.get("index"): g for g in inv.get("gpus") or []}
    for s in torch.get("smoke") or []:
        g = static.get(s.get("index"), {})
        label = _("matmul GPU %s") % s.get("index")
        if s.get("error"):
            out.append(Check(label, FAIL, s["error"]))
            continue
        spec = spec_for(g.get("name") or s.get("name"))
        if not spec:
            out.append(Check(label, PASS, _("%.0f TFLOPS %s (no spec to compare)") % (s["tflops"], s["dtype"])))
            continue
        frac = s["tflops"] / spec["tflops"]
        dyn = (sample_gpus or {}).get(s.get("index"), {})
        clocks = ""
        if dyn:
            from remote_probe.wire import throttle_names
            clocks = _("; SM %s/%s MHz, power %s/%s W%s") % (
                dyn.get("clock_sm"), g.get("clock_sm_max"), dyn.get("power"), g.get("power_limit"),
                (_(", throttled: ") + ", ".join(throttle_names(dyn.get("throttle")))) if dyn.get("throttle") else "")
        text = _("%.0f TFLOPS %s = %d%% of the %s spec (%d)%s") % (
            s["tflops"], s["dtype"], round(frac * 100), g.get("name"), spec["tflops"], clocks)
        if frac < 0.25:
            out.append(Check(label, FAIL, text + _(" → shared, throttled or power-capped card")))
        elif frac < 0.5:
            out.append(Check(label, WARN, text + _(" → far below spec")))
        else:
            out.append(Check(label, PASS, text))
    return out


def check_host(inv, facts, cfg) -> List[Check]:
    gpus = inv.get("gpus") or []
    out = []
    n = max(1, len(gpus))
    cores = facts.get("cpu_limit") or facts.get("ncpu") or 0
    datacenter = any(DATACENTER.search(g.get("name") or "") for g in gpus)
    if gpus:
        verdict = PASS if cores / n >= cfg.min_cores_per_gpu or not datacenter else WARN
        out.append(Check(_("CPU cores per GPU"), verdict, _("%.1f cores per GPU%s") % (
            cores / n, "" if verdict == PASS else _(" (< %g: the dataloader will starve the GPU)")
            % cfg.min_cores_per_gpu)))
        ram = (facts.get("mem_total") or 0) / 1024.0 / n
        verdict = PASS if ram >= cfg.min_ram_gb_per_gpu or not datacenter else WARN
        out.append(Check(_("RAM per GPU"), verdict, _("%.0f GB per GPU%s") % (
            ram, "" if verdict == PASS else _(" (< %g GB)") % cfg.min_ram_gb_per_gpu)))
    return out


def check_disks(facts, preset) -> List[Check]:
    disks = {d["mount"]: d for d in facts.get("disks") or []}
    out = []
    root = disks.get("/")
    if root:
        free = root["free"] / 1024.0
        out.append(Check(_("system disk"), PASS if free >= 10 else WARN,
                         _("%.0f GB free on /%s") % (free, "" if free >= 10 else _(" (pip and checkpoints will fail)"))))
    for path in preset.persistent_paths if preset else ():
        if path == "/":
            continue
        d = disks.get(path)
        if d is None:
            out.append(Check(_("data disk %s") % path, WARN, _("not mounted: data saved there may not persist")))
        else:
            free = d["free"] / 1024.0
            out.append(Check(_("data disk %s") % path, PASS if free >= 20 else WARN, _("%.0f GB free") % free))
    return out


def check_net(facts) -> List[Check]:
    out = []
    for r in facts.get("net") or []:
        host = re.sub(r"^https?://([^/]+).*$", r"\1", r["url"])
        if r.get("ok"):
            out.append(Check(_("reach %s") % host, PASS, _("answered in %d ms") % r.get("ms", 0)))
        else:
            hint = _(" → use a mirror (HF_ENDPOINT=https://hf-mirror.com) or upload weights") \
                if "huggingface" in host else _(" → configure a pip mirror") if "pypi" in host else ""
            out.append(Check(_("reach %s") % host, WARN, _("no answer: %s%s") % (r.get("error"), hint)))
    return out


def run_checks(facts, cfg, preset=None, sample_gpus=None) -> List[Check]:
    inv = facts.get("inventory") or {}
    torch = facts.get("torch") or {}
    checks = check_gpus(inv, cfg.gpus)
    checks += check_torch(inv, torch)
    visible = torch.get("cuda_visible_devices", facts.get("cuda_visible_devices"))
    if inv.get("gpus"):
        checks += check_visible_devices(inv, visible)
    checks += check_smoke(inv, torch, sample_gpus)
    checks += check_host(inv, facts, cfg)
    checks += check_disks(facts, preset)
    checks += check_net(facts)
    checks.append(Check("tmux", PASS if facts.get("tmux") else WARN,
                        _("installed") if facts.get("tmux") else _("missing: jobs die with the SSH connection")))
    if facts.get("conda_pythons") and not cfg.python:
        checks.append(Check(_("training environment"), PASS, _("using %s; conda envs found: %s (set `python` "
                            "for this host to pick one)") % (torch.get("python_path"), ", ".join(facts["conda_pythons"][:4]))))
    return checks
