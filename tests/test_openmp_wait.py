"""OpenMP's wait policy: every dmlbench process asks its idle threads to sleep (set when dmlbench
is imported, before torch loads the runtime), a user's own value stands, and the policy changes
no number: a training step gives bit-identical gradients whichever threads wait how."""

import os
import subprocess
import sys

SCRIPT = """
import hashlib, os, sys
import dmlbench, torch
from dmlbench.models.embedding import EmbeddingNet
torch.set_num_threads(2)
torch.manual_seed(0)
net = EmbeddingNet("small_cnn", 16, pretrained=False)
net(torch.rand(8, 3, 32, 32)).pow(2).sum().backward()
digest = hashlib.sha256(b"".join(p.grad.numpy().tobytes() for p in net.parameters())).hexdigest()
print(os.environ["OMP_WAIT_POLICY"], digest)
"""


def policy_and_gradients(policy: str | None) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    said, digest = done.stdout.split()
    return said, digest


def test_idle_openmp_threads_sleep_unless_the_user_says_otherwise_and_no_number_changes():
    default, passive_gradients = policy_and_gradients(None)
    assert default == "PASSIVE"
    own, active_gradients = policy_and_gradients("ACTIVE")
    assert own == "ACTIVE"
    assert active_gradients == passive_gradients
