import lightning as L

from data.loaders import LoaderModule
from lab.model import Net
from lab.scalers import SharedScaler

if __name__ == "__main__":
    net = Net(SharedScaler())
    L.Trainer(accelerator="auto", max_epochs=3).fit(net, LoaderModule())
