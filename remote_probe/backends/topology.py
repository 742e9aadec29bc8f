"""The multi-GPU interconnect (issue 22): per GPU the PCIe link negotiated vs its maximum and its
active NVLinks; per GPU pair the common PCIe ancestor, NVLink or not, and P2P support.

Same schema from NVML and from a simulator scenario:
{"gpus": [{"index", "pcie_gen", "pcie_gen_max", "pcie_width", "pcie_width_max", "nvlinks"}],
 "pairs": [{"a", "b", "path", "nvlinks", "p2p"}]}
`path` reads like `nvidia-smi topo -m`: NV<n> (n direct links), NVSWITCH, PIX, PXB, PHB, NODE, SYS.
`p2p`: "ok", "not supported", or None (unknown).
"""

# nvmlGpuTopologyLevel_t -> nvidia-smi topo -m words
LEVELS = {0: "INTERNAL", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
MAX_LINKS = 18  # H100/H200 have 18 NVLinks; NVML answers "invalid argument" past the last one


def _int(v):
    if isinstance(v, (list, tuple)):  # some pynvml releases define a constant as a 1-tuple
        v = v[0] if v else None
    return v


def _bus(bus_id):
    """'00000000:1A:00.0' and '0000:1a:00.0' compare equal."""
    if not bus_id:
        return None
    if isinstance(bus_id, bytes):
        bus_id = bus_id.decode("ascii", "replace")
    parts = bus_id.lower().split(":")
    return ":".join(parts[-2:]) if len(parts) >= 2 else bus_id.lower()


def from_nvml(backend):
    """Read the interconnect through an NvmlBackend (its `call` turns unsupported fields into None)."""
    nv, call = backend.nv, backend.call
    ok = _int(getattr(nv, "NVML_P2P_STATUS_OK", 0))
    read_idx = _int(getattr(nv, "NVML_P2P_CAPS_INDEX_READ", 0))
    nvlink_idx = _int(getattr(nv, "NVML_P2P_CAPS_INDEX_NVLINK", 2))
    gpus, peers, buses = [], [], []
    for index, h in enumerate(backend.handles):
        pci = call(("nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo"), h)
        buses.append(_bus(getattr(pci, "busId", None)) if pci is not None else None)
        active, remote = 0, []
        for link in range(MAX_LINKS):
            state = call("nvmlDeviceGetNvLinkState", h, link)
            if state is None:
                break
            if state:
                active += 1
                rp = call(("nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetNvLinkRemotePciInfo"), h, link)
                remote.append(_bus(getattr(rp, "busId", None)) if rp is not None else None)
        peers.append(remote)
        gpus.append({
            "index": index,
            "pcie_gen": call("nvmlDeviceGetCurrPcieLinkGeneration", h),
            "pcie_gen_max": call(("nvmlDeviceGetGpuMaxPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkGeneration"), h),
            "pcie_width": call("nvmlDeviceGetCurrPcieLinkWidth", h),
            "pcie_width_max": call("nvmlDeviceGetMaxPcieLinkWidth", h),
            "nvlinks": active,
        })
    pairs = []
    handles = backend.handles
    for a in range(len(handles)):
        for b in range(a + 1, len(handles)):
            level = call("nvmlDeviceGetTopologyCommonAncestor", handles[a], handles[b])
            p2p = call("nvmlDeviceGetP2PStatus", handles[a], handles[b], read_idx)
            over_nvlink = call("nvmlDeviceGetP2PStatus", handles[a], handles[b], nvlink_idx)
            direct = sum(1 for r in peers[a] if r and r == buses[b])
            if direct:
                path = "NV%d" % direct
            elif over_nvlink == ok and gpus[a]["nvlinks"]:
                path = "NVSWITCH"  # NVLink P2P without a direct link: through an NVSwitch
            else:
                path = LEVELS.get(_int(level)) if level is not None else None
            pairs.append({"a": a, "b": b, "path": path,
                          "nvlinks": direct or (gpus[a]["nvlinks"] if path == "NVSWITCH" else 0),
                          "p2p": None if p2p is None else ("ok" if p2p == ok else "not supported")})
    return {"gpus": gpus, "pairs": pairs}


def from_scenario(scenario, count):
    """A simulator scenario's "topology": {"kind": "nvswitch"|"nvlink-pairs"|"pcie", "nvlinks": n,
    "pcie": [gen, width], "path": "PHB", "p2p": true, "degraded": {"gpu": i, "pcie": [gen, width]}}."""
    spec = scenario.get("topology") or {}
    if count == 0:
        return None
    kind = spec.get("kind", "pcie")
    gen, width = spec.get("pcie", [4, 16])
    gen_max, width_max = spec.get("pcie_max", [gen, width])
    links = int(spec.get("nvlinks", 12 if kind == "nvswitch" else 4 if kind == "nvlink-pairs" else 0))
    gpus = []
    for i in range(count):
        g = {"index": i, "pcie_gen": gen, "pcie_gen_max": gen_max, "pcie_width": width,
             "pcie_width_max": width_max, "nvlinks": links if kind != "pcie" else 0}
        for d in spec.get("degraded", []):
            if d.get("gpu") == i:
                g["pcie_gen"], g["pcie_width"] = d["pcie"]
        gpus.append(g)
    pairs = []
    for a in range(count):
        for b in range(a + 1, count):
            if kind == "nvswitch":
                path, n = "NVSWITCH", links
            elif kind == "nvlink-pairs" and a // 2 == b // 2:  # 0-1, 2-3 bridged
                path, n = "NV%d" % links, links
            else:
                path, n = spec.get("path", "PHB" if kind == "pcie" else "SYS"), 0
            p2p = spec.get("p2p", True) if path in ("PIX", "PXB", "PHB") or n else spec.get("p2p_far", False)
            pairs.append({"a": a, "b": b, "path": path, "nvlinks": n, "p2p": "ok" if p2p else "not supported"})
    return {"gpus": gpus, "pairs": pairs}
