import pytorch_lightning as pl


def fit_model(model, cores):
    trainer = pl.Trainer(tpu_cores=cores, max_epochs=3)
    trainer.fit(model)
    return trainer.checkpoint_callback.best_model_path
