import lightning as L


def run(model, loader):
    trainer = L.Trainer(devices="auto", precision=16)
    trainer.fit(model, loader)


if __name__ == "__main__":
    run(None, None)
