"""What a method is: its loss (`losses`), miner (`miners`), batch sampler (`samplers`), the batch of
pairs they share (`pairs`) and the criterion that calls them in training (`criterion`)."""
