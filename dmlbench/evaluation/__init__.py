"""From a trained network to its test metrics: embedding the test images (`model_eval`), exact
retrieval over chunks of the similarity matrix (`ranking`, `symmetric_ranking`, `rank_keys`),
k-means (`search`), the metrics themselves (`metrics`), a run's final evaluation
(`evaluate_run`, `final_metrics`) and the no-training reference rows (`reference`)."""
