import lightning as L
from scores import *


class ViewEvaluator(L.LightningModule):
    """`torch` and `np` come from `from scores import *` here."""

    def validation_step(self, batch, batch_idx):
        rays, target = batch
        target = target.cpu()
        chunks, depths = [], []
        for k in range(0, rays.shape[0], 1024):
            color, depth = self(rays[k : k + 1024])
            chunks.append(color.cpu());depths.append(depth.cpu())
        image, depth = torch.cat(chunks).reshape(target.shape), torch.cat(depths)
        err = (image - target).abs()
        shown = heat(depth, (2.0, 6.0))
        self.log("val/db", to_db(torch.mean(err**2).item()).item())
        self.shown = np.concatenate([shown, heat(err.cpu() * 5)])
