"""CPU-exact reproductions and loss-side measurements: no dataset, no training."""

from dmlbench.analysis import dro_identities, loss_timing, pair_weights

ANALYSES = {"pair_weights": pair_weights.run, "dro_identities": dro_identities.run,
            "loss_timing": loss_timing.run}
