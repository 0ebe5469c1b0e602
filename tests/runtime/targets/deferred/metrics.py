import statistics


def loss_summary(module):
    losses = module.train_losses
    return {"mean": statistics.fmean(losses), "last": losses[-1], "steps": len(losses)}
