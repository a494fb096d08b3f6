"""The baselines' retrievals: model-free (`model_free`) and fitted on a training split (`fitted`)."""
