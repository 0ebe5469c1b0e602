import pytorch_lightning as pl


def test_model(model, cores, checkpoint):
    trainer = pl.Trainer(tpu_cores=cores)
    trainer.test(model, ckpt_path=checkpoint)
