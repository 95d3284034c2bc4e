"""What a training cost: the ledger entry `<run>/cost.json`.

Per epoch the training loop records the images it trained on, the seconds of its evaluation,
and on a CUDA device the allocator's peak memory (torch.cuda's peak statistics, reset each epoch)
and the energy the GPU drew (NVML's total-energy counter, nvidia-ml-py, where the GPU has one).
`summary` adds them up from the epoch rows, so a resumed training counts every epoch once:

  train_seconds  = Σ epoch seconds (the optimiser steps and their data)
  eval_seconds   = Σ per-epoch evaluation seconds + the final evaluation's
  device_seconds = train_seconds + eval_seconds; gpu_hours = device_seconds / 3600 on a GPU, else 0
  images_per_second = Σ images / train_seconds
  energy_kwh     = Σ epoch joules / 3.6e6 (None when any epoch has no reading)
  wall_seconds   = the training step's wall time over all its attempts (set-up and recordings included)
"""

from __future__ import annotations

import torch

RECORD = "cost.json"


class EpochMeter:
    """Peak memory and energy of one epoch on `device` (nothing on a CPU)."""

    def __init__(self, device: torch.device):
        self.device = device
        self._nvml = _nvml_handle(device) if device.type == "cuda" else None
        self._joules = None

    def start(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        self._joules = self._read_joules()

    def stop(self) -> dict:
        if self.device.type != "cuda":
            return {}
        out = {"peak_gpu_mb": round(torch.cuda.max_memory_allocated(self.device) / 2**20)}
        end = self._read_joules()
        if end is not None and self._joules is not None:
            out["energy_j"] = round(end - self._joules, 1)
        return out

    def _read_joules(self) -> float | None:
        if self._nvml is None:
            return None
        import pynvml

        try:
            return pynvml.nvmlDeviceGetTotalEnergyConsumption(self._nvml) / 1000.0  # millijoules
        except pynvml.NVMLError:
            return None


def _nvml_handle(device: torch.device):
    """NVML's handle of the torch device (by its UUID: CUDA_VISIBLE_DEVICES renumbers devices), or
    None without nvidia-ml-py, an NVIDIA driver or an energy counter."""
    try:
        import pynvml

        pynvml.nvmlInit()
        uuid = str(torch.cuda.get_device_properties(device).uuid)
        handle = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
        pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        return handle
    except Exception:  # no package, no driver, a GPU without the counter
        return None


def summary(history: list[dict], final_eval_seconds: float, device: torch.device, wall_seconds: float) -> dict:
    train_seconds = sum(row["seconds"] for row in history)
    eval_seconds = sum(row.get("eval_seconds", 0.0) for row in history) + final_eval_seconds
    images = sum(row.get("images", 0) for row in history)
    joules = [row.get("energy_j") for row in history]
    peaks = [row["peak_gpu_mb"] for row in history if "peak_gpu_mb" in row]
    device_seconds = train_seconds + eval_seconds
    return {
        "device": str(device),
        "epochs": len(history),
        "images": images,
        "train_seconds": round(train_seconds, 3),
        "eval_seconds": round(eval_seconds, 3),
        "device_seconds": round(device_seconds, 3),
        "wall_seconds": round(wall_seconds, 3),
        "images_per_second": round(images / train_seconds, 2) if train_seconds else None,
        "gpu_hours": device_seconds / 3600 if device.type == "cuda" else 0.0,
        "peak_gpu_mb": max(peaks) if peaks else None,
        "energy_kwh": sum(joules) / 3.6e6 if history and None not in joules else None,
    }
