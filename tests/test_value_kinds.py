"""Value kinds and guards of the shared analysis, through the rules that depend on them: each
false-positive shape of issue 13 stays silent, each real shape is reported."""

from __future__ import annotations

import textwrap

import pytest

from tpulint.config.settings import Config
from tpulint.engine.source import check_source

HEAD = "import lightning as L\nimport numpy as np\nimport torch\nfrom torch import nn\n\n\n"


def codes(source: str, select: str = "TPU1,TPU2", preview: bool = False) -> list[tuple[str, int]]:
    config = Config.from_mapping({"select": select.split(","), "preview": preview})
    found = check_source(HEAD + textwrap.dedent(source).lstrip("\n"), "model.py", config)
    return [(d.code, d.start.line - HEAD.count("\n")) for d in found]


SILENT = {
    # Where `isinstance(x, Tensor)` fails, a number stays a number: its elements, and the
    # value itself, are host data.
    "a scale that is a tensor or a number": """
        def rescale(scale, factor):
            if isinstance(scale, torch.Tensor):
                scale = [scale]
            scale = list(reversed(scale))
            return [s * factor for s in scale]

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                for s in rescale(2.0, 3):
                    if s > 1:
                        batch = batch * s
                return batch.mean()
        """,
    "shape parameters of a forward": """
        class Attention(nn.Module):
            def forward(self, query, hw_shape):
                H, W = hw_shape
                pad_r = (7 - W % 7) % 7
                if pad_r > 0 or query.shape[1] != H * W:
                    query = query[:, : H * W]
                return query
        """,
    "a CPU tensor compared with an attribute": """
        class Search(nn.Module):
            def forward(self, scores):
                best = torch.zeros((4, 2), dtype=torch.long)
                if torch.any(best == self.eos_id):
                    return torch.where(best == self.eos_id)
                return scores
        """,
    "module offload": """
        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.expert = nn.Linear(4, 4)

            def training_step(self, batch, batch_idx):
                self.expert.cpu()
                return self(batch)
        """,
    "a module passed in, annotated, and offloaded": """
        class Collector(nn.Module):
            def __init__(self, core_model: nn.Module):
                super().__init__()
                self.core_model = core_model

            def forward(self, x: torch.Tensor, teacher: nn.Module):
                preds = self.core_model.to(x.device).forward(x)
                self.core_model.cpu()
                teacher.cpu()
                return preds
        """,
    "numpy generator": """
        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.rng = np.random.default_rng(0)

            def training_step(self, batch, batch_idx):
                noise = self.rng.normal(size=3)
                scale = noise.mean().item()
                return self(batch) * scale + float(noise.max())
        """,
    "lazy initialisation runs once": """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                if not self.built:
                    self.scale = batch.std().item()
                    self.built = True
                return self(batch) / self.scale
        """,
    "lazy initialisation by a method that sets the flag": """
        class Tracker(nn.Module):
            def _init_from_batch(self, x):
                self.count = int(x.sum().item())
                if x.max() > 0:
                    self.scale = x.max()
                self.initialized = True

            def forward(self, x):
                if not self.initialized:
                    self._init_from_batch(x)
                return x
        """,
    "code written for another accelerator": """
        class BCELossIPU(nn.Module):
            def forward(self, input, target):
                nan_targets = target.isnan()
                target[nan_targets] = 0.0
                return (input - target).abs().mean()

        class Model(L.LightningModule):
            def training_step(self, batch, batch_idx):
                if self.on_ipu:
                    return self.ipu_step(batch)
                return self(batch).mean()

            def ipu_step(self, batch):
                if batch.max() > 1:
                    batch = batch / batch.max()
                return self(batch).mean()
        """,
    "code written for CUDA graphs": """
        class Decoder(nn.Module):
            def forward(self, logits):
                if self.use_graphs:
                    return self.search_cuda_graphs(logits)
                return logits.argmax(-1)

            def search_cuda_graphs(self, logits):
                while self.state.active.any():
                    self.graph.replay()
                return self.state.best.clone()

        class Model(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return self.decoder(batch).float().mean()
        """,
    "transforms of a plain preset class and of a collate function": """
        class RandomCrop(nn.Module):
            def forward(self, image, target):
                keep = target["boxes"][:, 2] > target["boxes"][:, 0]
                target["boxes"] = target["boxes"][keep]
                return image, target

        class CopyPaste(nn.Module):
            def forward(self, images, targets):
                masks = targets[0]["masks"]
                return images, masks[masks.sum((1, 2)) > 0]

        class Compose:
            def __init__(self, transforms):
                self.transforms = transforms

            def __call__(self, image, target):
                for t in self.transforms:
                    image, target = t(image, target)
                return image, target

        class PresetTrain:
            def __init__(self):
                self.transforms = Compose([RandomCrop()])

            def __call__(self, image, target):
                return self.transforms(image, target)

        def copypaste_collate(batch):
            return CopyPaste()(*tuple(zip(*batch)))

        class Data(L.LightningDataModule):
            def train_dataloader(self):
                data = CocoDetection("train", PresetTrain())
                return torch.utils.data.DataLoader(data, collate_fn=copypaste_collate)
        """,
    "a tensor compared with None": """
        class M(L.LightningModule):
            def forward(self, x, ge=None):
                if ge == None:
                    ge = x.mean(0)
                if ge != None:
                    x = x + ge
                return x

            def training_step(self, batch, batch_idx):
                return self(batch, self(batch)).mean()
        """,
    "cache filled once": """
        class M(L.LightningModule):
            def forward(self, x):
                if self.table is None:
                    self.table = x.max().item()
                return x
        """,
    "global_step guard in training": """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch).mean()
                if self.global_step % 100 == 0:
                    print(loss.item())
                return loss
        """,
    "helper returning a number": """
        class M(L.LightningModule):
            def _weight(self, epoch):
                return min(1.0, epoch / 10)

            def training_step(self, batch, batch_idx):
                w = self._weight(self.current_epoch)
                if w > 0.5:
                    batch = batch * 2
                return self(batch)
        """,
    "helper returning numpy": """
        def host_stats(values):
            return np.asarray(values).mean()

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                m = host_stats([1, 2])
                if m > 1:
                    batch = batch * 2
                return self(batch)
        """,
    "isinstance narrowing": """
        class M(L.LightningModule):
            def _step(self, label):
                if isinstance(label, torch.Tensor):
                    label = label.long()
                else:
                    if label == 0:
                        return None
                return label

            def training_step(self, batch, batch_idx):
                return self._step(batch) + self._step(0)
        """,
    "a helper only ever given CPU tensors": """
        def grow(values, limit):
            for v in values:
                if v > limit:
                    return v
            return limit

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                steps = torch.arange(1, 10)
                grow(steps, torch.tensor(4))
                return self(batch)
        """,
    "cpu tensor from a helper": """
        def coin():
            return torch.rand(1)

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                if coin().item() < 0.5:
                    batch = batch.flip(0)
                return self(batch)
        """,
    # Issue 21: a parameter annotated as a tensor that every call passes a list it builds:
    # its items are what the elements are (counts here, unknown at worst), not tensors.
    "a list of counts passed to a tensor-annotated parameter": """
        class Loss(nn.Module):
            def forward(self, preds, groups):
                sizes = [len(g) for g in groups]
                return self.per_group(preds, sizes)

            def per_group(self, preds, sizes: torch.Tensor):
                total = 0
                for i in range(len(sizes)):
                    total = total + preds.new_full((2,), float(sizes[i]))
                return total

        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.loss = Loss()

            def training_step(self, batch, batch_idx):
                return self.loss(batch, [[1, 2], [3]]).sum()
        """,
    "a list of unknown items passed to a tensor-annotated parameter": """
        def split_sizes(preds, sizes: torch.Tensor):
            return [float(sizes[i]) for i in range(len(sizes))]

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                parts = split_sizes(batch, [item.size for item in self.items])
                return batch.sum() * len(parts)
        """,
    # A property of the annotated project class that returns `len(...)` or says `-> int` is
    # a Python number, whatever rows of the batch the callers hand the method.
    "a count property of an annotated project class": """
        class Clip:
            def __init__(self, boxes, items):
                self.boxes = boxes
                self._items = items

            @property
            def count(self) -> int:
                return len(self._items)

            @property
            def size(self):
                return len(self._items)

        class Queue:
            def add(self, clip: Clip):
                if clip.count == 0 or clip.size > 3:
                    return None
                return clip.boxes

        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.queue = Queue()

            def training_step(self, batch, batch_idx):
                for clip in batch:
                    self.queue.add(clip)
                return batch.sum()
        """,
}

REPORTED = {
    # Counter-cases of the above: a list of the step's tensors keeps its items device
    # tensors; a call passing a tensor keeps the annotation; a property computed from the
    # tensors stays a tensor.
    "a list of device tensors passed to a tensor-annotated parameter": (
        """
        def scale(xs: torch.Tensor):
            return float(xs[0])

        def count(n: torch.Tensor):
            return float(n[0])

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                a = scale([batch.sum(), batch.mean()])
                b = count(batch)
                return batch.sum() * a * b
        """,
        [("TPU103", 2), ("TPU103", 5)],
    ),
    "a tensor property of an annotated project class": (
        """
        class Clip:
            def __init__(self, boxes):
                self.boxes = boxes

            @property
            def score(self) -> torch.Tensor:
                return self.boxes.sum()

        class Queue:
            def add(self, clip: Clip):
                if clip.score > 0:
                    return None
                return clip.boxes

        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.queue = Queue()

            def training_step(self, batch, batch_idx):
                for clip in batch:
                    self.queue.add(clip)
                return batch.sum()
        """,
        [("TPU104", 11)],
    ),
    # A decoder attribute a flag makes one of two project modules, one returning a tensor,
    # the other a tuple: what the generator hands the step is a device tensor.
    "a decoder one of two modules, a tensor or a tuple": (
        """
        class Single(nn.Module):
            def forward(self, x):
                return torch.tanh(self.post(x))

        class Split(nn.Module):
            def forward(self, x):
                y = self.post(x)
                return y, y.flip(-1)

        class Generator(nn.Module):
            def __init__(self, split):
                super().__init__()
                self.split = split
                if split:
                    self.dec = Split()
                else:
                    self.dec = Single()

            def forward(self, z):
                if self.split:
                    wave, bands = self.dec(z)
                else:
                    wave = self.dec(z)
                    bands = None
                return wave, bands

        def range_check(wave):
            if torch.max(wave) > 1.0:
                print("clipping")
            return wave

        class Vocoder(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.gen = Generator(False)

            def training_step(self, batch, batch_idx):
                wave, _ = self.gen(batch)
                return range_check(wave).mean()
        """,
        [("TPU104", 28)],
    ),
    # A norm helper given the module's parameters: the `isinstance(..., Tensor)` branch
    # that wraps one tensor leaves, where it fails, a container of what the caller passed,
    # and `list(filter(...))` keeps its elements.
    "a norm helper that filters the parameters it is given": (
        """
        def total_norm(params, kind=2):
            if isinstance(params, torch.Tensor):
                params = [params]
            params = list(filter(lambda w: w.grad is not None, params))
            acc = 0
            for w in params:
                acc += w.grad.norm(kind).item() ** kind
            return acc ** (1.0 / kind)

        class GAN(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self.gen(batch).mean()
                self.manual_backward(loss)
                self.log("gnorm", total_norm(self.gen.parameters()))
        """,
        [("TPU101", 7)],
    ),
    # The one-time body is quiet (`.item()` runs once), but the test reads the device buffer
    # on the host every step.
    "lazy initialisation of a buffer flag": (
        """
        class Codebook(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("initted", torch.tensor(False))

            def init_embed_(self, data):
                self.scale = data.abs().max().item()
                self.initted.data.copy_(torch.tensor(True))

            def forward(self, x):
                if not self.initted:
                    self.init_embed_(x)
                return x
        """,
        [("TPU104", 11)],
    ),
    "augmentation a LightningModule applies to the batch": (
        """
        class RandomErase(nn.Module):
            def forward(self, images):
                keep = images.mean((1, 2, 3)) > 0
                return images[keep]

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.transforms = nn.Sequential(RandomErase())

            def training_step(self, batch, batch_idx):
                return self(self.transforms(batch)).mean()
        """,
        [("TPU202", 4)],
    ),
    "__call__ of an object held in an attribute": (
        """
        class RobustScaler:
            def __call__(self, data, weights):
                assert not torch.any(torch.isnan(data))
                return data / weights.sum()

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.scaler = RobustScaler()

            def training_step(self, batch, batch_idx):
                return self.scaler(batch, batch).mean()
        """,
        [("TPU104", 3)],
    ),
    "helper return value": (
        """
        class M(L.LightningModule):
            def _loss(self, out, y):
                return nn.functional.cross_entropy(out, y)

            def training_step(self, batch, batch_idx):
                x, y = batch
                loss = self._loss(self(x), y)
                if loss > 100:
                    loss = loss / 100
                return loss
        """,
        [("TPU104", 8)],
    ),
    "global_step guard in validation": (
        """
        class M(L.LightningModule):
            def validation_step(self, batch, batch_idx):
                loss = self(batch).mean()
                if self.global_step % 100 == 0:
                    print(loss.item())
        """,
        [("TPU101", 5)],
    ),
    "a tuple from a helper": (
        """
        class M(L.LightningModule):
            def _shared(self, batch):
                out = self(batch)
                return out.mean(), out

            def training_step(self, batch, batch_idx):
                loss, out = self._shared(batch)
                if loss > 1:
                    loss = loss * 0
                return loss
        """,
        [("TPU104", 8)],
    ),
    "tensor kept through a None branch": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                aux = self(batch).mean()
                if batch_idx < 0:
                    aux = None
                return aux.item()
        """,
        [("TPU101", 6)],
    ),
    "loop over tensors": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                parts = self(batch).split(4)
                total = 0
                for part in parts:
                    total += float(part.sum())
                for a, b in zip(parts, parts):
                    if (a > b).any():
                        total += 1
                return total
        """,
        [("TPU103", 6), ("TPU104", 8)],
    ),
    "generate on a module": (
        """
        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.model = nn.Transformer()

            def validation_step(self, batch, batch_idx):
                out = self.model.generate(batch)
                if out.sum() > 0:
                    return out
        """,
        [("TPU104", 8)],
    ),
    "forward parameters of a module are tensors": (
        """
        class Head(nn.Module):
            def forward(self, scores, lengths):
                if scores.max() > 10:
                    scores = scores / 10
                return scores[:, : lengths.max()]
        """,
        [("TPU104", 3), ("TPU205", 5)],
    ),
}


# Code that runs only on some steps (issue 21): periodic tests by arithmetic, whatever the
# names, collect-the-first-N guards, and error-only paths.
SILENT_GUARDS = {
    "a periodic test on a counter, whatever its name": """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch).mean()
                self.seen += 1
                if self.seen % self.report_freq == 0:
                    print(loss.item())
                return loss
        """,
    "a periodic test by a literal, in a conjunction": """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch).mean()
                if self.trainer.is_global_zero and self.seen % 50 == 0:
                    print(loss.item())
                return loss
        """,
    "a periodic test negated": """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch).mean()
                if not self.counter % self.every:
                    print(loss.item())
                return loss
        """,
    "an early exit on a periodic test": """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch).mean()
                self._report(loss)
                return loss

            def _report(self, loss):
                if self.counter % self.every != 0:
                    return
                print(loss.item())
        """,
    "a boolean method returning a periodic test": """
        class M(L.LightningModule):
            def _due(self) -> bool:
                \"\"\"Whether to report now.\"\"\"
                return self.calls % self.period == 0

            def training_step(self, batch, batch_idx):
                loss = self(batch).mean()
                if self._due():
                    self._report(loss)
                self.calls += 1
                return loss

            def _report(self, loss):
                print(loss.item())
        """,
    "collecting the first N examples": """
        class M(L.LightningModule):
            def validation_step(self, batch, batch_idx):
                out = self(batch)
                if len(self.samples) < self.max_samples:
                    self.samples.append(out.mean().item())
                return out
        """,
    "collecting through a helper that grows the container": """
        class M(L.LightningModule):
            def validation_step(self, batch, batch_idx):
                out = self(batch)
                if self.keep is not None and len(self.keep) < self.limit:
                    self._keep(out)
                return out

            def _keep(self, out):
                for row in out:
                    self.keep.append(row.cpu())
        """,
    "an early exit once a callback's per-epoch batch counter passes N": """
        class Shown(L.Callback):
            def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
                pl_module.shown["train"] += 1

            def on_train_epoch_end(self, trainer, pl_module):
                pl_module.shown["train"] = 0


        def draw(images):
            return images[0].detach().cpu()


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                out = self(batch)
                self.picture(batch, out, "train")
                return out.mean()

            def picture(self, images, out, split):
                count = self.shown[split]
                if count >= self.hparams.n_pictures or self.hparams.quiet:
                    return
                kept = out.detach().cpu()
                draw(images)
                return kept
        """,
    "a block under a counter a method of the class grows after the step": """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                out = self(batch)
                if self.kept < self.hparams.n_kept:
                    print(out.detach().cpu())
                return out.mean()

            def on_train_batch_end(self, outputs, batch, batch_idx):
                self.kept = self.kept + 1
        """,
    "a counter of what was logged": """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch).mean()
                while self.n_shown < 3:
                    print(loss.item())
                    self.n_shown += 1
                return loss
        """,
    "the message of an assertion": """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                out = self(batch)
                assert out.shape[0] > 0, out.max().item()
                return out.mean()
        """,
    "a helper called only in an assertion's message": """
        class M(L.LightningModule):
            def _describe(self, out):
                return f"{out.max().item()}"

            def training_step(self, batch, batch_idx):
                out = self(batch)
                assert out.shape[0] > 0, self._describe(out)
                return out.mean()
        """,
    "a helper called just before a raise": """
        class M(L.LightningModule):
            def _describe(self, out):
                return f"{out.max().item()}"

            def training_step(self, batch, batch_idx):
                out = self(batch)
                if out.shape[0] == 0:
                    text = self._describe(out)
                    raise ValueError(text)
                return out.mean()
        """,
    "a mask indexed inside the message of a raise": """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                out = self(batch)
                empty = out.sum(dim=1) == 0
                if self.strict:
                    raise ValueError(f"empty rows: {out[empty].tolist()}")
                return out.mean()
        """,
    "a helper called only in the exception a raise builds": """
        class M(L.LightningModule):
            def _describe(self, out):
                return f"{out.max().item()}"

            def training_step(self, batch, batch_idx):
                out = self(batch)
                if self.strict:
                    raise RuntimeError(self._describe(out))
                return out.mean()
        """,
    "a helper called only in a branch that warns": """
        import warnings


        class M(L.LightningModule):
            def _describe(self, out):
                return f"{out.max().item()}"

            def training_step(self, batch, batch_idx):
                out = self(batch)
                if self.strict:
                    pass
                else:
                    warnings.warn(self._describe(out))
                return out.mean()
        """,
    "the else of a None test the code before makes unreachable": """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx, top=None):
                out = self(batch)
                if top is None:
                    top = out.shape[-1]
                if top is not None:
                    k = top
                else:
                    k = out.argmax().item()
                return out.mean() * k
        """,
    "a helper called only in a branch the code before makes unreachable": """
        class M(L.LightningModule):
            def _top(self, out):
                return out.argmax().item()

            def training_step(self, batch, batch_idx, top=None):
                out = self(batch)
                if top is None:
                    top = out.shape[-1]
                if top is None:
                    top = self._top(out)
                return out.mean() * top
        """,
}

REPORTED_GUARDS = {
    # the same early exit, but nothing increments the counter (or it restarts every call)
    "an early exit on a counter nothing grows, and on a local one": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                out = self(batch)
                self.picture(out, "train")
                self.rows(out)
                return out.mean()

            def picture(self, out, split):
                count = self.shown[split]
                if count > 10:
                    return
                print(out.detach().cpu())

            def rows(self, out):
                count = 0
                for row in out:
                    count += 1
                    if count > 3:
                        continue
                    print(row.cpu())
        """,
        [("TPU103", 12), ("TPU103", 20)],
    ),
    # `if self.global_step > N: return` reads the step count (as today), not a first-N counter
    "an early exit past a warmup of the step count, in validation": (
        """
        class M(L.LightningModule):
            def validation_step(self, batch, batch_idx):
                out = self(batch)
                self.n_steps += 1
                if self.n_steps > self.hparams.warmup:
                    return out.mean()
                print(out.detach().cpu())
                return out.mean()
        """,
        [("TPU103", 7)],
    ),
    # the same masked helper, but a call passes the mask: the branch runs every step
    "a masked branch of a parameter a call passes": (
        """
        def masked_loss(pred, target, mask=None):
            if mask is not None:
                pred, target = pred[mask], target[mask]
            return ((pred - target) ** 2).mean()

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                x, y = batch
                return masked_loss(self(x), y, mask=y > 0)
        """,
        [("TPU202", 3)],
    ),
    # the same fallback, but one call leaves `size` out: the branch runs
    "a None branch of a parameter one call leaves out": (
        """
        def resize(x, size=None):
            if size is None:
                size = int(x.sum().item())
            return x[..., :size]

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                x, y = batch
                return resize(self(x), size=y.shape[-1]).mean() + resize(y).mean()
        """,
        [("TPU101", 3)],
    ),
    # the same flag, passed both ways: both branches run
    "a flag calls pass both ways": (
        """
        def encode(x, cartesian=False):
            if cartesian:
                return x * 2
            return x[x > 0]

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return encode(self(batch), cartesian=True).mean() + encode(batch).mean()
        """,
        [("TPU202", 4)],
    ),
    "a branch that warns and does more": (
        """
        import warnings


        class M(L.LightningModule):
            def _describe(self, out):
                return f"{out.max().item()}"

            def training_step(self, batch, batch_idx):
                out = self(batch)
                if self.strict:
                    warnings.warn(self._describe(out))
                    self.flags += 1
                return out.mean()
        """,
        [("TPU101", 6)],
    ),
    "a None test whose name is rebound in between": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx, top=None):
                out = self(batch)
                if top is None:
                    top = out.shape[-1]
                top = self.pick(top)
                if top is not None:
                    k = top
                else:
                    k = out.argmax().item()
                return out.mean() * k
        """,
        [("TPU101", 10)],
    ),
    "a tensor branch of a parameter a call passes a tensor": (
        """
        def spread(counts, width):
            if isinstance(width, torch.Tensor):
                if width.max() > 4:
                    width = width.clamp(max=4)
            return counts * width

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return spread(batch, 2).sum() + spread(batch, batch.sum(0)).sum()
        """,
        [("TPU104", 3)],
    ),
    "a periodic test by 2 runs every other step": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch).mean()
                if self.seen % 2 == 0:
                    print(loss.item())
                return loss
        """,
        [("TPU101", 5)],
    ),
    "a periodic test that fails rarely runs on most steps": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch).mean()
                if self.seen % self.every != 0:
                    print(loss.item())
                return loss
        """,
        [("TPU101", 5)],
    ),
    "gradient accumulation is the cadence of every optimizer step": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch).mean()
                if self.seen % self.accumulate_batches == 0:
                    print(loss.item())
                return loss
        """,
        [("TPU101", 5)],
    ),
    "a step counter stands still in validation": (
        """
        class M(L.LightningModule):
            def validation_step(self, batch, batch_idx):
                loss = self(batch).mean()
                if self.step_count % self.every == 0:
                    print(loss.item())
        """,
        [("TPU101", 5)],
    ),
    "a local counter bounds a loop that runs every step": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch).mean()
                count = 0
                while count < 3:
                    print(loss.item())
                    count += 1
                return loss
        """,
        [("TPU101", 6)],
    ),
    "a bounded test whose body does not grow what it bounds": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch).mean()
                if len(self.history) < self.window:
                    print(loss.item())
                return loss
        """,
        [("TPU101", 5)],
    ),
    "the test of an assertion": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                out = self(batch)
                assert out.max().item() < 10, "diverged"
                return out.mean()
        """,
        [("TPU101", 4)],
    ),
}


@pytest.mark.parametrize("name", sorted(SILENT_GUARDS))
def test_guard_shapes_stay_silent(name: str) -> None:
    assert codes(SILENT_GUARDS[name]) == []


# Shapes whose findings are outside the default scope, with the reason `--scope all` gives.
KWARGS_METER = """
    from steplib import comm
    from steplib.plans import WarmupCosineSchedule


    class Meter:
        def __init__(self):
            self.vals = {}

        def update(self, **fields):
            for key, val in fields.items():
                if isinstance(val, torch.Tensor):
                    val = val.item()
                self.vals[key] = float(val)


    class M(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.meter = Meter()
            self.rate_plan = WarmupCosineSchedule(base=1e-3, total=1000)

        def training_step(self, batch, batch_idx):
            loss = self(batch).mean()
            self.meter.update(rate=self.rate_plan[self.global_step], size=batch.shape[0] / 2)
            self.meter.update(share=1.0 / comm.get_world_size(), **{"epoch": 1})
"""

OUTSIDE_SCOPE = {
    # `meter.update(rate=..., size=...)`: every call passes `**fields` Python numbers (the
    # rate at a step of a schedule class of another package, a size, a share of the world
    # size), so the tensor branch of the loop over its values never runs
    "a tensor branch of a **kwargs loop no call passes a tensor to": (
        KWARGS_METER + "            return loss\n",
        "the project's calls pass it no tensor",
    ),
    # `repeat_blocks(x, 2)`: the helper takes an int or a tensor; the project passes ints, so
    # its `isinstance(..., torch.Tensor)` branches never run
    "a tensor branch no call passes a tensor to": (
        """
        def repeat_blocks(sizes, repeats, block_inc=0):
            if isinstance(repeats, torch.Tensor):
                assert all(repeats >= 0)
                if torch.any(repeats == 0):
                    repeats = repeats + 1
            if isinstance(block_inc, torch.Tensor) and torch.any(block_inc < 0):
                block_inc = block_inc.clamp(min=0)
            return torch.repeat_interleave(sizes, 2) + block_inc

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return repeat_blocks(batch, 2, block_inc=0).sum()
        """,
        "the project's calls pass it no tensor",
    ),
    # `masked_loss(pred, target)`: every call leaves `mask` to its default None, so the
    # boolean-mask branch never runs (a call passing one, or spreading `*args`, would)
    "a masked branch of a parameter no call passes": (
        """
        def masked_loss(pred, target, mask=None):
            if mask is not None:
                pred, target = pred[mask], target[mask]
            return ((pred - target) ** 2).mean()

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                x, y = batch
                return masked_loss(self(x), y)
        """,
        "every call of the function leaves `mask` to its default None",
    ),
    # `resize(x, size=n)` everywhere: every call passes `size`, so the host-sync fallback
    # under `if size is None:` never runs
    "a None branch of a parameter every call passes": (
        """
        def resize(x, size=None):
            if size is None:
                size = int(x.sum().item())
            return x[..., :size]

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                x, y = batch
                return resize(self(x), size=y.shape[-1]).mean()
        """,
        "every call of the function passes `size` a value that is not None",
    ),
    # `encode(x, cartesian=True)` everywhere: the `else` branch never runs
    "the other branch of a flag every call passes as the same literal": (
        """
        def encode(x, cartesian=False):
            if cartesian:
                return x * 2
            return x[x > 0]

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return encode(self(batch), cartesian=True).mean()
        """,
        "`cartesian` is true in every call of the function",
    ),
    # a self-test inside a function of a module that training imports
    "a __main__ self-test inside a function": (
        """
        def swish(x):
            y = x * torch.sigmoid(x)
            if __name__ == "__main__":
                assert y.min() >= -1.0
            return y

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return swish(self(batch)).mean()
        """,
        'under `if __name__ == "__main__"`',
    ),
}


@pytest.mark.parametrize("name", sorted(OUTSIDE_SCOPE))
def test_shapes_outside_the_scope(name: str) -> None:
    source, reason = OUTSIDE_SCOPE[name]
    config = Config.from_mapping({"select": ["TPU1", "TPU2"]})
    found = check_source(HEAD + textwrap.dedent(source).lstrip("\n"), "model.py", config)
    if name in _NOT_REACHED:
        # the hot reach follows the literal (or the default) the step's call passes: the
        # branch is not reached from the step at all (param_routes), so nothing is found
        assert not found, found
        return
    assert found and all(not config.shows(d) for d in found)
    assert all(reason in (d.scope or "") for d in found), [d.scope for d in found]


_NOT_REACHED = frozenset(
    {
        "a masked branch of a parameter no call passes",
        "the other branch of a flag every call passes as the same literal",
    }
)


def test_a_tensor_passed_by_keyword_keeps_the_kwargs_branch() -> None:
    # One call passing a tensor by keyword (or spreading a mapping the model cannot see)
    # keeps the tensor branch of `**fields` in the scope.
    config = Config.from_mapping({"select": ["TPU1", "TPU2"]})
    for extra in ("self.meter.update(loss=loss.detach())", "self.meter.update(**self.stats)"):
        source = KWARGS_METER + f"            {extra}\n            return loss\n"
        found = check_source(HEAD + textwrap.dedent(source).lstrip("\n"), "model.py", config)
        shown = [(d.code, d.start.line - HEAD.count("\n")) for d in found if config.shows(d)]
        assert shown == [("TPU101", 12)], extra


@pytest.mark.parametrize("name", sorted(REPORTED_GUARDS))
def test_guard_shapes_still_reported(name: str) -> None:
    source, expected = REPORTED_GUARDS[name]
    assert codes(source) == expected


@pytest.mark.parametrize("name", sorted(SILENT))
def test_false_positive_shapes_stay_silent(name: str) -> None:
    assert codes(SILENT[name]) == []


@pytest.mark.parametrize("name", sorted(REPORTED))
def test_real_shapes_are_reported(name: str) -> None:
    source, expected = REPORTED[name]
    assert codes(source) == expected


MASKS = """
    def valid_pixels(target, classes):
        return (target != 255) * (target < classes)

    class Seg(L.LightningModule):
        def training_step(self, batch, batch_idx):
            x, t = batch
            logits = self(x)
            valid = (t != 255) * (t < 21)
            a = logits[valid]
            b = logits[valid_pixels(t, 21)]
            c = logits[torch.logical_and(t > 0, t < 5)]
            d = logits[~t.bool()]
            keep = t >= 0
            return a.sum() + b.sum() + c.sum() + d.sum() + (logits[keep] - t[keep]).sum()
"""


def test_semantic_masks() -> None:
    found = codes(MASKS, "TPU202")
    assert found == [("TPU202", 9), ("TPU202", 10), ("TPU202", 11), ("TPU202", 12), ("TPU202", 14)]


def test_one_finding_for_one_mask_on_one_line() -> None:
    config = Config.from_mapping({"select": ["TPU202"]})
    found = check_source(HEAD + textwrap.dedent(MASKS).lstrip("\n"), "model.py", config)
    last = found[-1]
    assert last.message.startswith("`logits[keep]` and `t[keep]` in training_step select by")
    # `keep` comes from `t`, not `logits`: the suggestion says how to broadcast it.
    assert "`keep[..., None]` if the mask covers only leading dimensions" in last.message


def test_rows_of_a_tensor_moved_to_the_cpu_stay_on_the_cpu() -> None:
    # The copies themselves are reported (TPU103); what is done with the rows on the host,
    # here and in a nested helper they are passed to, is not a TPU problem.
    source = """
        def tokens_to_text(tokens, lengths, tokenizer):
            def drop_special(ids):
                return ids[ids != tokenizer.eos]

            out = []
            for ids, n in zip(tokens.cpu(), lengths.cpu()):
                starts = (ids == tokenizer.bos).nonzero(as_tuple=True)[0]
                out.append((starts, drop_special(ids[:4])))
            return out

        class M(L.LightningModule):
            def validation_step(self, batch, batch_idx):
                return tokens_to_text(self(batch), batch, self.tokenizer)
        """
    assert codes(source, select="TPU2") == []
    # The two copies of one `for` header are one finding (one statement, issue 21 item 7).
    assert [code for code, _ in codes(source, select="TPU1")] == ["TPU103"]


# --- one value semantics (issue 21): shapes the merged inference decides ------------------

SILENT_SHAPES = {
    "a tuple returned by a helper hands back its argument, not the caller's parameter": """
        class Decoder(L.LightningModule):
            def start(self, feats):
                return {"steps": int(feats.shape[1]), "out": feats}

            def advance(self, state):
                return self(state["out"]), state

            def run(self, feats, lengths):
                state = self.start(feats)
                out, state = self.advance(state)
                return self.finish(state, lengths)

            def finish(self, state, lengths):
                if state["steps"] > 4:
                    return state["out"][:, :4]
                return state["out"]

            def validation_step(self, batch, batch_idx):
                return self.run(batch, batch_idx)
        """,
    "the values of a dict filled at computed keys": """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                out = self(batch)
                best = out.argmax()
                scores = dict()
                for name in ("a", "b"):
                    scores[name] = self.head(out)
                picked = {k: v[best] for k, v in scores.items()}
                return picked["a"].sum()
        """,
    "a helper given a value the step computes from its batch's metadata": """
        from collections import defaultdict

        def group_by_language(languages):
            groups = defaultdict(list)
            for i, lang in enumerate(list(languages)):
                groups[lang].append(i)
            return groups

        class M(L.LightningModule):
            def validation_step(self, batch, batch_idx):
                groups = group_by_language(batch.get("languages"))
                return self(batch["audio"]).sum() + len(groups)
        """,
    "an attribute set from the constructor's config, passed by a step helper": """
        class M(L.LightningModule):
            def __init__(self, cfg):
                super().__init__()
                self.factor = cfg.get("factor", 1)

            def regroup(self, codes, factor):
                if factor == 1:
                    return codes
                return codes.reshape(codes.shape[0], -1, int(factor))

            def shared(self, batch):
                return self.regroup(self(batch), self.factor)

            def training_step(self, batch, batch_idx):
                return self.shared(batch).sum()
        """,
    "the batch index a step passes a helper": """
        def warmup(step, total):
            if step < total:
                return float(step) / total
            return 1.0

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return self(batch).sum() * warmup(batch_idx, 100)
        """,
    "isinstance narrows to host data": """
        import pandas as pd

        def as_list(x):
            if isinstance(x, list):
                return x
            elif isinstance(x, pd.Series):
                return x.tolist()
            elif isinstance(x, str):
                return [x.upper()]
            return x

        class Scorer(nn.Module):
            def forward(self, x):
                return as_list(x)
        """,
    "an annotated list of strings reaches a helper": """
        from typing import List

        def count(values):
            return values.tolist()

        class MotifScore(nn.Module):
            def forward(self, seqs: List[str]):
                return count(seqs)
        """,
    "Tensor.type() is a string": """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                if batch.type() == "torch.cuda.HalfTensor":
                    batch = batch.float()
                return self(batch)
        """,
    "a mask built on the host from shapes": """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                drop = torch.full((8,), False)
                drop[torch.arange(3) + 2] = True
                keep = ~drop
                return self(batch[:, keep])
        """,
    "a CPU tensor times a parameter of unknown kind stays a CPU tensor": """
        def weigh(weights, loss):
            w = torch.tensor(weights)
            scaled = w * 2
            return scaled.cpu().numpy()

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return weigh([1.0, 2.0], batch)
        """,
    "parameters a forward reshapes by are ints": """
        class GridMixer(nn.Module):
            def __init__(self, side):
                super().__init__()
                self.side = side
                self.proj = nn.Linear(8, 8)

            def forward(self, tokens, rows, cols):
                n, length, c = tokens.shape
                assert length == rows * cols, "tokens do not fill the grid"
                pad = (4 - cols % 4) % 4
                padded = rows + pad
                grid = self.proj(tokens).transpose(1, 2).reshape(n, c, rows, cols)
                if self.side != padded:
                    grid = grid[:, :, : self.side]
                return grid
        """,
    "parameters a helper reshapes by are ints": """
        def split_windows(x, rows, cols, size):
            n, _, c = x.shape
            x = x.view(n, rows // size, size, cols // size, size, c)
            return x.permute(0, 1, 3, 2, 4, 5)

        class WindowMixer(nn.Module):
            def windows(self, x, rows, cols):
                n, _, c = x.shape
                return split_windows(x.transpose(1, 2), rows, cols, 4)

            def forward(self, packed, rows, cols):
                q = packed[0]
                if q.shape[1] != rows * cols:
                    q = q[:, : rows * cols]
                return self.windows(q, rows, cols)
        """,
    "a sub-module's forward given a shape int by every call": """
        class Broadcast(nn.Module):
            def __init__(self):
                super().__init__()
                self.table = nn.Embedding(4, 8)

            def forward(self, ids, steps):
                return self.table(ids).unsqueeze(1).repeat_interleave(steps, dim=1)

        class Decoder(nn.Module):
            def __init__(self):
                super().__init__()
                self.cond = Broadcast()
                self.body = nn.Linear(8, 8)

            def forward(self, x, ids):
                hidden = self.body(x)
                return hidden + self.cond(ids, hidden.shape[1])

        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.decoder = Decoder()

            def training_step(self, batch, batch_idx):
                return self.decoder(batch, batch).mean()
        """,
    "a torch.Size passed to a sub-module, indexed there": """
        class Head(nn.Module):
            def forward(self, feats, in_shape: torch.Tensor):
                frames = int(in_shape[0])
                return feats.reshape(frames, -1)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Head()

            def forward(self, images):
                dims = images.shape
                return self.head(images.flatten(1), dims)
        """,
    "a parameter cast with astype is numpy": """
        class Binner(nn.Module):
            def forward(self, x, edges):
                levels = edges.astype(np.float32)
                if edges.max() > 1:
                    levels = levels / edges.max()
                return x * float(levels[0].item())
        """,
    "iterating a dict gives its keys": """
        class Shift(nn.Module):
            def forward(self, batch, skip):
                kept = {name: value for name, value in batch.items() if name not in skip}
                limits = {"tokens": 1, "labels": 2}
                out = {}
                for name in kept:
                    out[name] = batch[name][:, 1:]
                for name in limits:
                    out[name] = out[name][:, : limits[name]]
                return out
        """,
    "results of string methods are strings": """
        class Router(nn.Module):
            def forward(self, ids, scores):
                groups = {}
                for position, key in enumerate(ids):
                    source, _ = key.split("::")
                    groups[source] = position
                tag = ids[0].strip().lower()
                if tag.startswith("a"):
                    scores = scores * 2
                return scores
        """,
    "a path or a concatenated string compared with a batch tensor": """
        import os

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                x, y = batch
                if os.path.basename(self.root) == y:
                    return None
                if self.prefix + ".wav" == y or sep.join(words) == y:
                    return None
                return self(x).sum()
        """,
    # issue 21 (sci33): a mask a helper builds from shapes and constants and cuts by rank
    # has a count fixed by the shapes; its `nonzero` runs on the CPU once per shape.
    "a static mask a helper builds and chunks by rank": """
        def ranks():
            return 0, 2

        class PairLoss(nn.Module):
            def _block_mask(self, size: int, rank: int) -> torch.Tensor:
                _, world = ranks()
                full = ~torch.eye(size).bool().repeat((1, 2))
                part_mask = torch.chunk(full, world, dim=0)[rank]
                return part_mask

            def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
                rank, world = ranks()
                neg_mask = self._block_mask(len(a), rank)
                sim = a @ torch.cat((a, b), dim=0).T
                return sim[neg_mask].sum()

        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.loss = PairLoss()
                self.proj = nn.Linear(4, 4)

            def training_step(self, batch, batch_idx):
                z = self.proj(batch)
                return self.loss(z, z)
        """,
    # issue 21 (sci31): a distribution built from Python numbers holds CPU tensors and
    # draws CPU samples.
    "a distribution built from Python numbers samples on the CPU": """
        from torch.distributions import Beta

        class Cut(nn.Module):
            def __init__(self, beta: float = 5.0):
                super().__init__()
                self.dist = Beta(beta, beta)

            def forward(self, x):
                return x * self.dist.sample().item()

        class M(L.LightningModule):
            def __init__(self, cfg):
                super().__init__()
                self.cut = Cut(cfg.beta)

            def training_step(self, batch, batch_idx):
                lam = torch.distributions.Uniform(0.0, 1.0).sample().item()
                return self.cut(batch).mean() * lam
        """,
    # issue 21 (sci33): a collate function annotated to return lists of Python values
    # builds its list entries (speaker names) as host data.
    "list entries of a collate annotated as lists of strings": """
        from typing import Dict, List, Union

        class Data(L.LightningDataModule):
            def train_dataloader(self):
                return torch.utils.data.DataLoader(self.ds, collate_fn=self.collate)

            def collate(self, items) -> Dict[str, Union[torch.Tensor, List[str], List[int]]]:
                wave = torch.stack([s["wave"] for s in items])
                who = [s["who"] for s in items]
                return {"wave": wave, "who": who}

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                same = [int(p == q) for p, q in zip(batch["who"], batch["who"][::-1])]
                return self(batch["wave"]).mean() * len(same)
        """,
}

REPORTED_SHAPES = {
    "a mask a helper draws, chunked by rank, stays reported": (
        """
        class PairLoss(nn.Module):
            def _block_mask(self, size: int, rank: int) -> torch.Tensor:
                full = torch.rand(size, 2 * size) < 0.5
                part_mask = torch.chunk(full, 2, dim=0)[rank]
                return part_mask

            def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
                neg_mask = self._block_mask(len(a), 0)
                sim = a @ torch.cat((a, b), dim=0).T
                return sim[neg_mask].sum()

        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.loss = PairLoss()
                self.proj = nn.Linear(4, 4)

            def training_step(self, batch, batch_idx):
                z = self.proj(batch)
                return self.loss(z, z)
        """,
        [("TPU202", 10)],
    ),
    "a distribution built from device tensors samples on the device": (
        """
        class Mix(nn.Module):
            def __init__(self):
                super().__init__()
                self.alpha = nn.Parameter(torch.ones(1))

            def forward(self, x):
                d = torch.distributions.Beta(self.alpha, self.alpha)
                return x * d.sample().item()

        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.mix = Mix()

            def training_step(self, batch, batch_idx):
                return self.mix(batch).mean()
        """,
        [("TPU101", 8)],
    ),
    "list entries of a collate annotated as lists of tensors stay reported": (
        """
        from typing import Dict, List, Union

        class Data(L.LightningDataModule):
            def train_dataloader(self):
                return torch.utils.data.DataLoader(self.ds, collate_fn=self.collate)

            def collate(self, items) -> Dict[str, Union[torch.Tensor, List[torch.Tensor]]]:
                wave = torch.stack([s["wave"] for s in items])
                who = [s["who"] for s in items]
                return {"wave": wave, "who": who}

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                same = [int(p == q) for p, q in zip(batch["who"], batch["who"][::-1])]
                return self(batch["wave"]).mean() * len(same)
        """,
        [("TPU103", 14)],
    ),
    "a part of the step's batch a shared step hands a module-level helper": (
        """
        def span_mask(lengths):
            widths = lengths.tolist()
            return torch.arange(max(widths))[None, :] < torch.tensor(widths)[:, None]

        class M(L.LightningModule):
            def shared(self, batch, split):
                feats, lengths = batch
                return self(feats, span_mask(lengths)).sum()

            def training_step(self, batch, batch_idx):
                return self.shared(batch, "train")
        """,
        [("TPU103", 2)],
    ),
    "a registered buffer read as a Python number": (
        """
        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.register_buffer("cursor", torch.zeros(1, dtype=torch.long))

            def training_step(self, batch, batch_idx):
                start = int(self.cursor)
                return self(batch[start:]).sum()
        """,
        [("TPU103", 7)],
    ),
    "isinstance narrows to a tensor": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                out = self.heads(batch)
                for name, v in out.items():
                    if isinstance(v, torch.Tensor):
                        v = v.item()
                return out
        """,
        [("TPU101", 6)],
    ),
    "rows of a zip inside enumerate": (
        """
        class M(nn.Module):
            def forward(self, x):
                feats = self.backbone(x)
                for i, (_, f) in enumerate(zip(self.layers, feats)):
                    self.store.append(f.cpu())
                return x
        """,
        [("TPU103", 5)],
    ),
    "torch functions of lists of tensors are tensors": (
        """
        class M(nn.Module):
            def forward(self, a, b):
                both = torch.cat([a, b])
                return both.cpu()
        """,
        [("TPU103", 4)],
    ),
    "attributes of the step's data are step data": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                n = batch.lengths.max().item()
                return self(batch.x[:, :n])
        """,
        # The size read with `.item()` (TPU205) is folded into the host read's finding.
        [("TPU101", 3)],
    ),
    "a comprehension variable over a device tensor": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch)
                values = [int(v) for v in loss]
                return loss
        """,
        [("TPU103", 4)],
    ),
    "a sub-module's forward given device lengths": (
        """
        class Broadcast(nn.Module):
            def __init__(self):
                super().__init__()
                self.table = nn.Embedding(4, 8)

            def forward(self, ids, steps):
                return self.table(ids).repeat_interleave(steps, dim=0)

        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.cond = Broadcast()

            def training_step(self, batch, batch_idx):
                ids, lengths = batch
                return self.cond(ids, lengths).mean()
        """,
        [("TPU201", 7)],
    ),
    "a parameter compared with a size but never used as one": (
        """
        class Gate(nn.Module):
            def forward(self, x, limit):
                n, length, c = x.shape
                if length > limit:
                    x = x[:, :length]
                return x.reshape(n, -1)
        """,
        [("TPU104", 4)],
    ),
    "a parameter rebound before it is used as a size": (
        """
        class Pool(nn.Module):
            def forward(self, x, h):
                if h.sum() > 0:
                    x = x * 2
                h = h.shape[-1]
                return x.view(-1, h)
        """,
        [("TPU104", 3)],
    ),
    "string keys of a local dict, and lists built by appending": (
        """
        class Lion(torch.optim.Optimizer):
            @torch.no_grad()
            def step(self, closure=None):
                for group in self.param_groups:
                    for p in group["params"]:
                        state = self.state[p]
                        if len(state) == 0:
                            state["step"] = torch.tensor(0.0)
                            state["avg"] = torch.zeros_like(p)
                        state["step"] += 1
                        bias = 1 - 0.9 ** state["step"].item()
                        p.add_(state["avg"], alpha=-group["lr"] / bias)
                        if state["avg"].abs().max().item() > 10:
                            state["avg"].zero_()

        def mean_of(values):
            return sum(v.item() for v in values) / len(values)

        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                copies = []
                sizes = []
                for chunk in batch:
                    copies.append(self(chunk).detach().cpu())
                    sizes.append(len(chunk))
                spread = max(sizes) - min(s for s in sizes)
                self.log("avg", mean_of(copies) + spread)
                state = {"step": self(batch).mean()}
                if state["step"].item() > 3:
                    state = {"step": torch.tensor(0.0)}
                return self(batch).mean()

            def configure_optimizers(self):
                return Lion(self.parameters())
        """,
        # `state["step"]` is a CPU tensor (torch.tensor without a device), the average of a
        # parameter is on the device; the CPU copies are reported where they are made.
        [("TPU101", 13), ("TPU103", 24), ("TPU101", 29)],
    ),
    # On a TPU host a CUDA/MPS chain picks the CPU: what is moved there (or made there) is a
    # host tensor, its tests and selections are CPU work (issue 21, item 3's family); the
    # moves of device tensors are the copies to the host (TPU103).
    "a CUDA device chain picks the CPU on a TPU host": (
        """
        import functools


        @functools.lru_cache
        def pick_device():
            if torch.cuda.is_available():
                return torch.device("cuda")
            if torch.backends.mps.is_available():
                return torch.device("mps")
            return torch.device("cpu")


        def chain_device():
            return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.host_device = "cuda" if torch.cuda.is_available() else "cpu"

            def training_step(self, batch, batch_idx):
                out = self(batch)
                place = pick_device() if out.device != torch.device("cpu") else out.device
                ids = out.detach().argmax(-1).to(place)
                kept = ids[ids > 0]
                if kept.sum() > 3:
                    return out.mean()
                other = out.detach().to(chain_device())
                if other.sum() > 3:
                    return out.mean()
                third = out.detach().to(self.host_device)
                if third.sum() > 3:
                    return out.mean()
                counts = torch.zeros(3, device=pick_device())
                if counts.sum() > 3:
                    return out.mean()
                if torch.cuda.is_available():
                    device = "cuda"
                else:
                    device = torch.device("cpu")
                fourth = out.detach().to(device)
                return out.mean() + len(fourth[fourth > 0])
        """,
        [("TPU103", 25), ("TPU103", 29), ("TPU103", 32), ("TPU103", 42)],
    ),
    "a device that may be the XLA device keeps the move on the device": (
        """
        import torch_xla.core.xla_model as xm


        def pick_device():
            if torch.cuda.is_available():
                return torch.device("cuda")
            return torch.device("cpu")


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx, device=None):
                out = self(batch)
                first = out.detach().to(self.device)
                if first.sum() > 3:
                    return out.mean()
                second = out.detach().to(out.device if out.device.type != "cpu" else pick_device())
                if second.sum() > 3:
                    return out.mean()
                third = out.detach().to(xm.xla_device())
                if third.sum() > 3:
                    return out.mean()
                return out.mean()
        """,
        [("TPU104", 14), ("TPU104", 17), ("TPU104", 20)],
    ),
    "string keys of an optimizer's state attribute, stored in another method": (
        """
        def _single_tensor_mad(params, grads, state_steps, lr):
            for i, param in enumerate(params):
                step_t = state_steps[i]
                step = step_t.item()
                param.add_(grads[i], alpha=-lr * step)

        class Mad(torch.optim.Optimizer):
            def _init_state(self, p):
                state = self.state[p]
                state["step"] = torch.tensor(0.0)
                state["avg"] = torch.zeros_like(p)

            @torch.no_grad()
            def step(self, closure=None):
                if "k" not in self.state:
                    self.state["k"] = torch.tensor([0], dtype=torch.long)
                k = self.state["k"].item()
                for group in self.param_groups:
                    params, grads, state_steps = [], [], []
                    for p in group["params"]:
                        if len(self.state[p]) == 0:
                            self._init_state(p)
                        state = self.state[p]
                        params.append(p)
                        grads.append(p.grad)
                        state_steps.append(state["step"])
                        s = self.state[p]["step"].item()
                        a = self.state[p]["avg"].sum().item()
                        p.add_(state["avg"], alpha=-group["lr"] * k * s * a)
                    _single_tensor_mad(params, grads, state_steps, group["lr"])
                self.state["k"] += 1

        class Moved(torch.optim.Optimizer):
            def __init__(self, params):
                super().__init__(params, {})
                self.state["k"] = torch.tensor([0])

            def step(self, closure=None):
                for group in self.param_groups:
                    for p in group["params"]:
                        self.state["k"] = p.grad.norm()
                        k = self.state["k"].item()
                        if p not in self.state:
                            self.state[p] = {"step": torch.zeros((), device=p.device)}
                        self.state[p]["step"] = torch.tensor(1.0)
                        s = self.state[p]["step"].item()
                        p.add_(p.grad, alpha=-k * s)
        """,
        [("TPU101", 28), ("TPU101", 42), ("TPU101", 46)],
    ),
    "a tensor split into chunks stays a tensor": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                first, second = self(batch).split(2)
                return first.sum().item() + second.sum()
        """,
        [("TPU101", 4)],
    ),
}


@pytest.mark.parametrize("name", sorted(SILENT_SHAPES))
def test_value_semantics_silent(name: str) -> None:
    assert codes(SILENT_SHAPES[name]) == []


# Shapes whose findings are in what a custom optimizer's `step()` reaches: TPU101 reports
# `.item()` there only in preview mode (docs/rule-status.md), so they are checked with it.
OPTIMIZER_STEP_SHAPES = frozenset(
    {
        "string keys of a local dict, and lists built by appending",
        "string keys of an optimizer's state attribute, stored in another method",
    }
)


@pytest.mark.parametrize("name", sorted(REPORTED_SHAPES))
def test_value_semantics_reported(name: str) -> None:
    source, expected = REPORTED_SHAPES[name]
    assert codes(source, preview=name in OPTIMIZER_STEP_SHAPES) == expected


def test_branching_chains_resolve_in_polynomial_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """`x = self.a(x)` in the three arms of 24 branches: the environment is a DAG of shared
    atom lists whose tree has 3**24 paths. Each list is resolved once per depth, not once per
    path (a real file with a deep conditional chain of layers took minutes before)."""
    from tpulint.analysis.value_query import PositionValues

    calls = 0
    original = PositionValues._atom

    def counting(self, atom, function, depth):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        assert calls < 5_000, "resolution walks every path of the environment"
        return original(self, atom, function, depth)

    monkeypatch.setattr(PositionValues, "_atom", counting)
    arms = "".join(
        f"        if self.flag{i}:\n            x = self.a{i}(x)\n"
        f"        elif self.other{i}:\n            x = self.b{i}(x)\n"
        f"        else:\n            x = self.c{i}(x)\n"
        for i in range(24)
    )
    source = (
        "class Model(L.LightningModule):\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        x = batch\n" + arms + "        print(x.item())\n        return x\n"
    )
    assert codes(source) == [("TPU101", 148)]


# Values on the host that the rules once took for device tensors (issue 21): each silent shape
# beside the nearest shape that stays reported.
HOST_VALUE_SILENT = {
    "the step count of a torch optimizer's state, kept on the CPU": """
        class Scaled(torch.optim.AdamW):
            @torch.no_grad()
            def step(self, closure=None):
                counts = []
                for group in self.param_groups:
                    for p in group["params"]:
                        state = self.state[p]
                        if len(state) == 0:
                            state["step"] = (
                                torch.zeros((1,), device=p.device)
                                if self.defaults["capturable"]
                                else torch.tensor(0.0)
                            )
                        counts.append(state["step"].cpu())
                return counts


        class M(L.LightningModule):
            def configure_optimizers(self):
                return Scaled(self.parameters())

            def training_step(self, batch, batch_idx):
                opt = self.optimizers()
                done = opt.optimizer.state[self.w]["step"].item()
                return self(batch).mean() * done
        """,
    "a size read from a shape under a tensor test for tracing": """
        class Mix(nn.Module):
            def forward(self, query, heads: int):
                rows, batch, width = query.shape
                if isinstance(width, torch.Tensor):
                    per_head = width.div(heads, rounding_mode="floor")
                else:
                    per_head = width // heads
                assert per_head * heads == width, "width must split into heads"
                return query.view(rows, batch, heads, per_head)


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return Mix()(batch, 4).sum()
        """,
    "a CPU tensor a helper fills and returns in a dict beside device entries": """
        def by_chunks(fn, pred, target, step=64):
            rows = pred.shape[0]
            held = torch.zeros(rows, pred.shape[1])
            for start in range(0, rows, step):
                end = start + step
                held[start:end] = fn(pred[start:end], target[start:end])
            return held


        def sq_err(a, b):
            return ((a - b) ** 2).mean(-1)


        def scores(pred, target, which=None):
            found = {}
            if which is None or "err" in which:
                found["err"] = by_chunks(sq_err, pred, target)
            if which is None or "gap" in which:
                found["gap"] = (pred - target).abs().mean(-1)
            return found


        def both(pred, target):
            return {"err": by_chunks(sq_err, pred, target), "gap": (pred - target).abs()}


        class M(L.LightningModule):
            def validation_step(self, batch, batch_idx):
                x, y = batch
                found = scores(self(x), y, which=["err", "gap"])
                self.log("err", found["err"].mean().item())
                self.log("err_rows", both(self(x), y)["err"].cpu())
        """,
    "offsets kept in a dunder attribute of a batch record": """
        def to_padded(graph, feats, key="x"):
            bounds = graph.__offsets__[key]
            parts = []
            for i in range(1, 1 + len(graph.y)):
                parts.append(feats[bounds[i - 1] : bounds[i]])
            return nn.utils.rnn.pad_sequence(parts, batch_first=True)


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return to_padded(batch, batch.x).sum()
        """,
    "polylines built on the host with torch.tensor and resampled beside themselves": """
        def resample(points: torch.Tensor, step: float = 2.0) -> torch.Tensor:
            gaps = torch.norm(points[1:] - points[:-1], dim=-1)
            along = torch.cat([torch.zeros(1, device=points.device), torch.cumsum(gaps, 0)])
            if along[-1] < 1e-6:
                return points[:1]
            count = max(2, int(along[-1].item() / step))
            marks = torch.linspace(0, along[-1].item(), count, device=points.device)
            where = torch.searchsorted(along, marks).clamp(1, len(along) - 1)
            return points[where]


        def closeness(a: torch.Tensor, b: torch.Tensor) -> float:
            return torch.cdist(a[None], b[None])[0].min(dim=1).values.mean().item()


        def page_score(found: list, truth: list) -> float:
            total = 0.0
            for a in found:
                for b in truth:
                    total += closeness(a, b)
            return total


        class Segmenter(L.LightningModule):
            def validation_step(self, batch, batch_idx):
                found, truth = [], []
                for line in batch["predicted_lines"][0]:
                    found.append(resample(torch.tensor(line, dtype=torch.float32)))
                for group in batch["lines"]:
                    extra = []
                    for line in group:
                        extra.append(resample(torch.tensor(line, dtype=torch.float32)))
                    truth.extend(extra)
                self.log("val_score", page_score(found, truth))
        """,
    "a message concatenated to a string in a batch-end hook": """
        class Progress(L.Callback):
            def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
                text = f"step={trainer.global_step}"
                if "message" in outputs:
                    text += ", " + outputs["message"]
                print(f"[{text}]")
        """,
}
HOST_VALUE_REPORTED = {
    "a moment of a torch optimizer's state, on the parameter's device": (
        """
        class Scaled(torch.optim.AdamW):
            @torch.no_grad()
            def step(self, closure=None):
                for group in self.param_groups:
                    for p in group["params"]:
                        state = self.state[p]
                        if len(state) == 0:
                            state["avg"] = torch.zeros_like(p)
                        print(state["avg"].cpu())


        class Keeper(nn.Module):
            def forward(self, x):
                self.state = {"step": x.sum()}
                return self.state["step"].cpu()


        class M(L.LightningModule):
            def configure_optimizers(self):
                return Scaled(self.parameters())

            def training_step(self, batch, batch_idx):
                return Keeper()(self(batch))
        """,
        [("TPU103", 9), ("TPU103", 15)],
    ),
    "offsets kept in a tensor attribute of a batch record": (
        """
        def to_padded(graph, feats, key="x"):
            bounds = graph.offsets[key]
            parts = []
            for i in range(1, 1 + len(graph.y)):
                parts.append(feats[bounds[i - 1] : bounds[i]])
            return nn.utils.rnn.pad_sequence(parts, batch_first=True)


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return to_padded(batch, batch.x).sum()
        """,
        [("TPU205", 5)],
    ),
    "polylines taken from the model's output on the device": (
        """
        def resample(points: torch.Tensor, step: float = 2.0) -> torch.Tensor:
            gaps = torch.norm(points[1:] - points[:-1], dim=-1)
            along = torch.cat([torch.zeros(1, device=points.device), torch.cumsum(gaps, 0)])
            if along[-1] < 1e-6:
                return points[:1]
            count = max(2, int(along[-1].item() / step))
            marks = torch.linspace(0, along[-1].item(), count, device=points.device)
            where = torch.searchsorted(along, marks).clamp(1, len(along) - 1)
            return points[where]


        def closeness(a: torch.Tensor, b: torch.Tensor) -> float:
            return torch.cdist(a[None], b[None])[0].min(dim=1).values.mean().item()


        def page_score(found: list, truth: list) -> float:
            total = 0.0
            for a in found:
                for b in truth:
                    total += closeness(a, b)
            return total


        class Segmenter(L.LightningModule):
            def validation_step(self, batch, batch_idx):
                found = [resample(line) for line in self(batch["image"])]
                truth = [resample(line) for line in self(batch["reference"])]
                self.log("val_score", page_score(found, truth))
        """,
        [("TPU104", 4), ("TPU101", 6), ("TPU101", 7), ("TPU101", 13)],
    ),
    "a tensor value under a tensor test of a parameter": (
        """
        class Mix(nn.Module):
            def forward(self, query, width):
                if isinstance(width, torch.Tensor):
                    assert width.sum() > 0, "empty"
                return query


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return Mix()(batch, batch.sum(-1)).sum()
        """,
        [("TPU104", 4)],
    ),
    "the device entries of a returned dict beside its CPU tensor": (
        """
        def by_chunks(pred, step=64):
            held = torch.zeros(pred.shape[0])
            for start in range(0, pred.shape[0], step):
                held[start : start + step] = pred[start : start + step].sum(-1)
            return held


        def scores(pred, target):
            found = {}
            found["err"] = by_chunks(pred - target)
            found["gap"] = (pred - target).abs().mean(-1)
            return found


        def both(pred, target):
            return {"err": by_chunks(pred), "gap": (pred - target).abs()}


        class M(L.LightningModule):
            def validation_step(self, batch, batch_idx):
                x, y = batch
                found = scores(self(x), y)
                self.log("gap", found["gap"].mean().item())
                self.log("gap_rows", both(self(x), y)["gap"].cpu())
        """,
        [("TPU102", 23), ("TPU103", 24)],
    ),
    "a loss formatted into the string concatenated in the step": (
        """
        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch).mean()
                note = f"step={self.global_step}"
                note += ", " + f"loss={loss:.3f}"
                print(f"[{note}]")
                return loss
        """,
        [("TPU103", 5)],
    ),
}


@pytest.mark.parametrize("name", sorted(HOST_VALUE_SILENT))
def test_host_values_stay_silent(name: str) -> None:
    assert codes(HOST_VALUE_SILENT[name]) == []


@pytest.mark.parametrize("name", sorted(HOST_VALUE_REPORTED))
def test_device_values_beside_them_stay_reported(name: str) -> None:
    source, expected = HOST_VALUE_REPORTED[name]
    assert codes(source) == expected


# What a batch key holds is what the dataset's items hold there after the collate: default_collate
# keeps strings as lists of strings (and no collate makes a tensor of text), and Lightning's
# batch transfer moves only tensors, so a file name read from the batch is a host string. A
# number or an array the collate turns into a tensor stays a device tensor. A tensor the step
# moved to the host stays there through arithmetic with values not known and through the
# entries of a dict that also spreads another one.
BATCH_VALUE_SILENT = {
    # issue 21 (sci44): a function passed as `collate_fn=` is a collate function whatever its
    # name; what it returns at a position of its tuple is what the step unpacks there.
    "a numpy array a collate returns at a tuple position, read in the step and a helper": """
        def separate(flat: torch.Tensor, lengths: torch.Tensor):
            longest = int(lengths.max().item())
            return [flat[: int(n.item())] for n in lengths], longest


        def featurize(items):
            lengths = np.array([len(b["x"]) for b in items], dtype=np.int32)
            flat = torch.from_numpy(np.concatenate([b["x"] for b in items]))
            return flat, lengths, [b["name"] for b in items]


        class Data(L.LightningDataModule):
            def train_dataloader(self):
                return torch.utils.data.DataLoader(self.ds, num_workers=4, collate_fn=featurize)


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                flat, lengths, names = batch
                parts, longest = separate(self(flat), lengths)
                if batch[1].max().item() > longest:
                    print(names[0])
                return sum(p.sum() for p in parts)
        """,
    "a numpy array a partial of a collate puts in its batch dict": """
        import functools


        def pad(items, value=0):
            sizes = np.array([len(b) for b in items])
            batch = {"x": torch.from_numpy(np.stack(items))}
            batch["sizes"] = sizes
            return batch


        class Data(L.LightningDataModule):
            def train_dataloader(self):
                return torch.utils.data.DataLoader(
                    self.ds, num_workers=4, collate_fn=functools.partial(pad, value=-1)
                )


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                if batch["sizes"].max().item() > 3:
                    print("long")
                return self(batch["x"]).sum()
        """,
    "a collate's numpy array compared with an entry of a constant table": """
        KINDS = {"car": 1, "bike": 2}


        def per_kind(scores, kinds, names):
            found = {}
            for name in names:
                chosen = kinds == KINDS[name]
                found[name] = scores[chosen].mean()
            return found


        def collate_tracks(items):
            kinds = np.array([b["kind"] for b in items])
            return {"x": torch.from_numpy(np.stack([b["x"] for b in items])), "kinds": kinds}


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                scores = self(batch["x"])
                return sum(per_kind(scores, batch["kinds"], ["car", "bike"]).values())
        """,
    "a path the dataset's items hold, known by its use as one, saved under in the step": """
        class Scans(torch.utils.data.Dataset):
            def __getitem__(self, i):
                source = self.files[i]
                volume = np.load(os.path.join(self.root, source))
                return {"volume": volume, "source": source}


        class Store:
            def __call__(self, batch):
                return {"volume": batch["volume"].float()}


        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.store = Store()

            def validation_step(self, batch, batch_idx):
                source = batch["source"]
                batch = self.store(batch)
                out = self(batch["volume"])
                torch.save(out, f"{source[0]}.pt")
        """,
    "a file name the dataset's items hold, formatted in the step": """
        class Clips(torch.utils.data.Dataset):
            def __len__(self):
                return 8

            def __getitem__(self, i):
                group, stem, offset = self.rows[i]
                if offset is None:
                    stem = str(os.path.splitext(stem)[0])
                item = {"audio": np.zeros(16), "clip": stem}
                item["title"] = f"clip {i}"
                return item


        class Prepare:
            def __call__(self, batch):
                return {"audio": batch["audio"].float()}


        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.prepare = Prepare()

            def training_step(self, batch, batch_idx):
                clip = batch["clip"][0]
                title = batch["title"]
                batch = self.prepare(batch)
                print(f"{clip}: {title}")
                return self(batch["audio"]).sum()
        """,
    "string ids an iterable dataset yields, compared in the step": """
        class Pairs(torch.utils.data.IterableDataset):
            def __iter__(self):
                for path in self.paths:
                    yield {"image": np.load(path), "id": os.path.basename(path)}


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                left, right = batch["id"], self.other["id"]
                assert left == right
                name = batch["id"][0].strip()
                print(f"{name}")
                return self(batch["image"]).sum()
        """,
    "a host index tensor divided by a size taken from a tuple attribute": """
        class Head(nn.Module):
            def __init__(self, grid):
                super().__init__()
                self.grid = grid

            def forward(self, x, keep=None):
                rows, cols = self.grid
                if keep is not None:
                    keep = (keep[:, 0] / rows).long()
                    print(keep.tolist())
                return x


        class M(L.LightningModule):
            def __init__(self, body):
                super().__init__()
                self.head = Head(grid=body.grid)

            def training_step(self, batch, batch_idx):
                keep = torch.stack([torch.randperm(8)[:3] for _ in range(2)])
                return self.head(batch, keep=keep).sum()
        """,
}
BATCH_VALUE_REPORTED = {
    # The position holds a tensor (the collate made one), the step unpacks a tuple of
    # another length than the collate returns, or a collate returns a batch of positions
    # not known: the unpacked values stay device tensors.
    "tuple positions a collate fills with tensors or of another length": (
        """
        def featurize(items):
            lengths = torch.from_numpy(np.array([len(b) for b in items]))
            return torch.from_numpy(np.stack(items)), lengths, np.ones(3)


        class Data(L.LightningDataModule):
            def train_dataloader(self):
                return torch.utils.data.DataLoader(self.ds, num_workers=4, collate_fn=featurize)


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                x, lengths, _ = batch
                first, second = batch
                if lengths.max().item() > 3:
                    print("long")
                if second.max().item() > 1:
                    print("wide")
                return self(x).sum()
        """,
        [("TPU101", 15), ("TPU101", 17)],
    ),
    "a table of constants the module changes in place": (
        """
        KINDS = {"car": 1, "bike": 2}


        def per_kind(scores, kinds, names):
            found = {}
            for name in names:
                chosen = kinds == KINDS[name]
                found[name] = scores[chosen].mean()
            return found


        def collate_tracks(items):
            kinds = np.array([b["kind"] for b in items])
            return {"x": torch.from_numpy(np.stack([b["x"] for b in items])), "kinds": kinds}


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                KINDS["car"] = self.car_code
                scores = self(batch["x"])
                return sum(per_kind(scores, batch["kinds"], ["car"]).values())
        """,
        [("TPU202", 8)],
    ),
    "a numpy position beside a collate that returns what default_collate builds": (
        """
        from torch.utils.data import default_collate


        def featurize(items):
            return torch.from_numpy(np.stack(items)), np.array([len(b) for b in items])


        def collate_plain(items):
            return default_collate(items)


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                x, lengths = batch
                if lengths.max().item() > 3:
                    print("long")
                return self(x).sum()


        def loaders(ds):
            return [
                torch.utils.data.DataLoader(ds, num_workers=4, collate_fn=featurize),
                torch.utils.data.DataLoader(ds, num_workers=4, collate_fn=collate_plain),
            ]
        """,
        [("TPU101", 15)],
    ),
    "a mask of device distances scaled by a 0-dim tensor and signs not known": (
        """
        def signed(points, faces):
            gaps = nearest(points, faces)
            dist = torch.sqrt(gaps) / torch.sqrt(torch.tensor(3))
            signs = 2.0 * (inside(points, faces).float() - 0.5)
            return (dist * signs).unsqueeze(-1)


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                sdf = signed(self(batch), batch)
                far = torch.abs(sdf).ge(0.5)
                sdf[far] = 0.0
                return sdf.sum()
        """,
        [("TPU202", 12)],
    ),
    "a host copy returned in a dict that also spreads the losses": (
        """
        def rows_of(track, steps=2):
            found = []
            for i in range(track.shape[0]):
                for j in range(steps):
                    found.append(track[i, j].cpu().numpy())
            return found


        class M(L.LightningModule):
            def shared(self, batch):
                out = self(batch)
                loss = out.mean()
                parts = {"mse": loss}
                return {"loss": loss, **parts, "pred": out.detach().cpu()}

            def validation_step(self, batch, batch_idx):
                found = self.shared(batch)
                for k, sample in enumerate(found["pred"].transpose(0, 1)):
                    rows_of(sample)
        """,
        [("TPU103", 14)],  # the copy itself, not the rows of the copy
    ),
    "a count the dataset's items hold, which default_collate makes a tensor": (
        """
        class Clips(torch.utils.data.Dataset):
            def __len__(self):
                return 8

            def __getitem__(self, i):
                stem = str(self.rows[i])
                return {"audio": np.zeros(16), "clip": stem, "count": 3}


        class Prepare:
            def __call__(self, batch):
                return {"audio": batch["audio"].float()}


        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.prepare = Prepare()

            def training_step(self, batch, batch_idx):
                clip = batch["clip"][0]
                count = batch["count"][0]
                batch = self.prepare(batch)
                print(f"{clip}: {count}")
                return self(batch["audio"]).sum()
        """,
        [("TPU103", 24)],
    ),
    "a key the items hold as a string in one dataset and an array in another": (
        """
        class Named(torch.utils.data.Dataset):
            def __getitem__(self, i):
                return {"audio": np.zeros(16), "clip": os.path.basename(self.paths[i])}


        class Coded(torch.utils.data.Dataset):
            def __getitem__(self, i):
                return {"audio": np.zeros(16), "clip": np.ones(4)}


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                if batch["clip"][0] > 0:
                    return self(batch["audio"]).sum()
        """,
        [("TPU104", 13)],
    ),
    "a device tensor divided by a size taken from a tuple attribute": (
        """
        class Head(nn.Module):
            def __init__(self, grid):
                super().__init__()
                self.grid = grid

            def forward(self, x, keep=None):
                rows, cols = self.grid
                if keep is not None:
                    keep = (keep[:, 0] / rows).long()
                    print(keep.tolist())
                return x


        class M(L.LightningModule):
            def __init__(self, body):
                super().__init__()
                self.head = Head(grid=body.grid)

            def training_step(self, batch, batch_idx):
                keep = self(batch).argsort(-1)[:, :3]
                return self.head(batch, keep=keep).sum()
        """,
        [("TPU103", 10)],
    ),
    "a device tensor returned in a dict after the spread losses": (
        """
        def rows_of(track, steps=2):
            found = []
            for i in range(track.shape[0]):
                for j in range(steps):
                    found.append(track[i, j].cpu().numpy())
            return found


        class M(L.LightningModule):
            def shared(self, batch):
                out = self(batch)
                loss = out.mean()
                parts = {"mse": loss}
                return {"loss": loss, **parts, "pred": out.detach()}

            def validation_step(self, batch, batch_idx):
                found = self.shared(batch)
                for k, sample in enumerate(found["pred"].transpose(0, 1)):
                    rows_of(sample)
        """,
        [("TPU103", 5)],
    ),
}


@pytest.mark.parametrize("name", sorted(BATCH_VALUE_SILENT))
def test_batch_host_values_stay_silent(name: str) -> None:
    assert codes("import os\n" + textwrap.dedent(BATCH_VALUE_SILENT[name])) == []


@pytest.mark.parametrize("name", sorted(BATCH_VALUE_REPORTED))
def test_batch_device_values_stay_reported(name: str) -> None:
    source, expected = BATCH_VALUE_REPORTED[name]
    found = codes("import os\n" + textwrap.dedent(source))
    assert found == [(code, line + 2) for code, line in expected]


def test_a_device_none_helper_places_its_tensors_where_each_call_says() -> None:
    # `device=None` left out, handed down by a wrapper, passed by position or by keyword:
    # only the calls naming a device tensor's device make device tensors.
    source = """
        def to_padded(rows, dtype=None, device=None):
            out = torch.as_tensor(rows, dtype=dtype)
            if device is not None:
                out = out.to(device)
            return out


        def to_batch(rows, device=None):
            return to_padded(rows, device=device)


        class Model(L.LightningModule):
            def training_step(self, batch, batch_idx):
                a = to_batch([1, 2], device=batch.device)
                b = to_batch([1, 2])
                c = to_padded([1, 2], None, batch.device)
                d = to_padded([1, 2], device=None)
                self.log("a", float(a.max()))
                self.log("b", float(b.max()))
                self.log("c", float(c.max()))
                self.log("d", float(d.max()))
    """
    assert [c for c in codes(source, "TPU102,TPU103")] == [("TPU102", 18), ("TPU102", 20)]


def test_a_buffer_made_on_a_constructor_device_param_stays_a_device_tensor() -> None:
    # `device=None` of `__init__`, kept in an attribute or wrapped in a mask: no call binds
    # it where the step reads it, presumed on the device as before.
    source = """
        class Hyps(nn.Module):
            def __init__(self, n, device=None):
                super().__init__()
                self.lengths = torch.zeros(n, device=device)

            def forward(self, x):
                if (self.lengths + 1).max() > 3:
                    return x
                return x * 2
    """
    assert codes(source, "TPU104") == [("TPU104", 7)]


# Issue 21: the fields a batch record of the project declares as Python values
# (`size: int`, `max_len: Optional[int]`, `names: List[str]` in a dataclass that also holds
# tensors) stay Python values through Lightning's batch transfer, which moves a record's
# tensor fields only; torch's default_collate cannot build such a record, so the project's
# collate built it as annotated. A NamedTuple's numbers are stacked into tensors by
# default_collate, and a name another record declares as a tensor may be one.
RECORD_FIELD_HEAD = "import dataclasses\nfrom typing import List, NamedTuple, Optional\n\n"

RECORD_FIELD_SILENT = {
    "a count and a length a dataclass batch declares as ints": """
        @dataclasses.dataclass
        class ClipBatch:
            size: int
            names: List[str]
            audio: torch.Tensor
            max_frames: Optional[int] = None


        def gather(items):
            return ClipBatch(
                size=len(items),
                names=[i[0] for i in items],
                audio=torch.stack([i[1] for i in items]),
                max_frames=max(i[1].shape[0] for i in items),
            )


        class M(L.LightningModule):
            def training_step(self, batch: ClipBatch, batch_idx):
                if batch.size != 1:
                    audio = batch.audio[:, : batch.max_frames]
                else:
                    audio = batch.audio
                out = self(audio)
                assert out.shape[0] == batch.size
                if batch.names[0] == "warmup":
                    return None
                return out.sum()


        def main():
            loader = torch.utils.data.DataLoader([], collate_fn=gather)
            L.Trainer(accelerator="tpu").fit(M(), loader)
        """,
    "an int field of a record a subclass extends, beside a sampler's own int": """
        @dataclasses.dataclass
        class Base:
            frames: torch.Tensor


        @dataclasses.dataclass
        class Tagged(Base):
            group: int


        class Groups(torch.utils.data.Sampler):
            def __init__(self, group):
                self.group = group


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                out = self(batch.frames)
                if batch.group > 0:
                    out = out * 2
                return out.sum()
        """,
}

RECORD_FIELD_REPORTED = {
    "a tensor field of the same record": (
        """
        @dataclasses.dataclass
        class ClipBatch:
            size: int
            labels: torch.Tensor


        class M(L.LightningModule):
            def training_step(self, batch: ClipBatch, batch_idx):
                if batch.labels.sum() > batch.size:
                    return None
                return self(batch.labels).sum()
        """,
        [("TPU104", 9)],
    ),
    "a NamedTuple's int, which default_collate stacks into a tensor": (
        """
        class Item(NamedTuple):
            count: int
            audio: torch.Tensor


        class Clips(torch.utils.data.Dataset):
            def __getitem__(self, i):
                return Item(3, torch.zeros(4))


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                if batch.count.max() > 1:
                    return None
                return self(batch.audio).sum()
        """,
        [("TPU104", 13)],
    ),
    "a name one record declares an int and another a tensor": (
        """
        @dataclasses.dataclass
        class Short:
            size: int
            audio: torch.Tensor


        @dataclasses.dataclass
        class Long:
            size: torch.Tensor
            audio: torch.Tensor


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                if batch.size > 1:
                    return None
                return self(batch.audio).sum()
        """,
        [("TPU104", 15)],
    ),
    "an int of a settings dataclass that holds no tensor": (
        """
        @dataclasses.dataclass
        class Settings:
            size: int
            rate: float


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                if batch.size > 1:
                    return None
                return self(batch.x).sum()
        """,
        [("TPU104", 9)],
    ),
}


@pytest.mark.parametrize("name", sorted(RECORD_FIELD_SILENT))
def test_host_fields_of_batch_records_stay_silent(name: str) -> None:
    assert codes(RECORD_FIELD_HEAD + textwrap.dedent(RECORD_FIELD_SILENT[name])) == []


@pytest.mark.parametrize("name", sorted(RECORD_FIELD_REPORTED))
def test_tensor_fields_beside_them_stay_reported(name: str) -> None:
    source, expected = RECORD_FIELD_REPORTED[name]
    found = codes(RECORD_FIELD_HEAD + textwrap.dedent(source))
    assert found == [(code, line + 4) for code, line in expected]


# An empty list literal beside other values (`hits[0] if ... else []`) has no element: an
# element of the value is one of the others' (a CPU tensor's rows stay CPU rows), so a helper
# fed a dict of host copies (`parts[k] = v[0].detach().cpu()` in a loop) reads host values.
EMPTY_ALTERNATIVE = """
    def trim(seq, stop=None):
        ends = (seq == stop).nonzero(as_tuple=True)[0] if stop is not None else []
        end = ends[0].item() if len(ends) > 0 else len(seq)
        return seq[:end]


    class Codec:
        def __init__(self):
            self.stop = 2

        def render(self, parts: dict):
            return trim(parts["ids"], stop=self.stop).tolist()


    class Net(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(4, 4)

        def sample(self):
            return {"ids": self.head(torch.zeros(2, 4, device=self.device)).argmax(-1)}


    class Preview(L.Callback):
        def __init__(self):
            self.codec = Codec()

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            out = pl_module.sample()
            parts = {}
            for k, v in out.items():
                parts[k] = v[0].clone().detach()COPY
            print(self.codec.render(parts))


    def main():
        L.Trainer(accelerator="tpu", callbacks=[Preview()]).fit(Net(), None)
    """


def test_an_element_of_host_copies_or_an_empty_list_is_a_host_value() -> None:
    assert codes(textwrap.dedent(EMPTY_ALTERNATIVE.replace("COPY", ".cpu()"))) == []


def test_an_element_of_device_tensors_or_an_empty_list_stays_reported() -> None:
    found = codes(textwrap.dedent(EMPTY_ALTERNATIVE.replace("COPY", "")))
    assert found == [("TPU201", 2), ("TPU101", 3)]


BERNOULLI_MASKS = """
class Masker(nn.Module):
    def forward(self, x):
        ids = x.long()
        picked = torch.bernoulli(torch.full(ids.shape, 0.15, device=x.device)).bool()
        swap = torch.bernoulli(torch.full(ids.shape, 0.8, device=x.device)).bool() & picked
        ids[swap] = 1
        drop = torch.bernoulli(torch.full(ids.shape, 0.5)).bool()
        ids[drop] = 2
        return ids.float().sum()
"""


def test_masks_drawn_on_a_device_tensors_device_are_device_masks() -> None:
    """`torch.bernoulli` draws where its input is: with `device=x.device` the mask is on the
    device (a sync to count it), without it on the CPU (no sync)."""
    config = Config.from_mapping({"select": ["TPU202"]})
    found = check_source(HEAD + BERNOULLI_MASKS.lstrip("\n"), "model.py", config)
    messages = [(d.start.line - HEAD.count("\n"), d.message) for d in found]
    assert [line for line, _ in messages] == [6, 8]
    assert "a sync to count it" in messages[0][1] and "host mask" not in messages[0][1]
    assert "the host mask `drop` (a CPU tensor)" in messages[1][1]


# Host values the step's code takes for device tensors: a collate's Python list of counts
# (Lightning's batch transfer moves tensors only), a CPU tensor moved only by CUDA-only code
# (`.cuda()`, or under `if t.is_cuda:`), a CPU schedule of timesteps, a helper's parameters
# that every call passes numbers, a CRF's decoded label lists. Each beside the shape that stays
# a device tensor (a collate that makes a tensor of the counts, a mask moved with
# `.to(x.device)`, a helper also called with a tensor).
HOST_SHAPES_SILENT = {
    "a read in the epoch loop around the loop over batches": """
        def main(model, optimizer, loader, epochs):
            for epoch in range(epochs):
                for x, y in loader:
                    loss = (model(x) - y).pow(2).mean()
                    loss.backward()
                    optimizer.step()
                print(epoch, loss.item())


        if __name__ == "__main__":
            main(None, None, [], 3)
        """,
    "step data moved to the CPU or a CUDA device by the process group's backend": """
        import torch.distributed as dist


        def serialize(data, group):
            device = torch.device("cpu" if dist.get_backend(group) == "gloo" else "cuda")
            if isinstance(data, torch.Tensor):
                data = data.to(device)
            return data


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch).sum()
                self.log("n", serialize(loss, None).sum())
                return loss
        """,
    "a buffer moved to the CPU or a CUDA device, and what pickle loads back": """
        import pickle

        import torch.distributed as dist


        def gather_objects(data, group):
            device = torch.device("cpu" if dist.get_backend(group) == "gloo" else "cuda")
            payload = torch.ByteTensor(list(pickle.dumps(data))).to(device=device)
            count = torch.tensor([payload.numel()], device=payload.device)
            if count.item() > 0:
                item = pickle.loads(payload.cpu().numpy().tobytes())
                if isinstance(item, torch.Tensor):
                    item = item.cpu()
                return [item]
            return []


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self(batch).sum()
                self.log("n", len(gather_objects(batch_idx, None)))
                return loss
        """,
    "a collate's list of counts read in the step": """
        class Pairs(torch.utils.data.Dataset):
            def __getitem__(self, i):
                row = self.rows[i]
                return {"ids": torch.tensor(row), "count": len(row)}

            def collate_fn(self, items):
                return {
                    "ids": torch.stack([x["ids"] for x in items]),
                    "count": [x["count"] for x in items],
                }


        class M(L.LightningModule):
            def train_dataloader(self):
                data = Pairs()
                return torch.utils.data.DataLoader(data, collate_fn=data.collate_fn)

            def training_step(self, batch, batch_idx):
                count = batch["count"]
                if max(count) != 0:
                    return self(batch["ids"]).sum()
                return self(batch["ids"]).mean()
        """,
    "a collate's list of lengths": """
        def pad_collate(items):
            lengths = [len(s) for s in items]
            ids = torch.nn.utils.rnn.pad_sequence(items, batch_first=True)
            return {"ids": ids, "lengths": lengths}


        class M(L.LightningModule):
            def train_dataloader(self):
                return torch.utils.data.DataLoader(self.data, collate_fn=pad_collate)

            def training_step(self, batch, batch_idx):
                if max(batch["lengths"]) > 8:
                    return self(batch["ids"][:, :8]).sum()
                return self(batch["ids"]).sum()
        """,
    "a CPU mask moved only when the scores are CUDA tensors": """
        def masked_loss(scores, counts):
            rows = [torch.ones(c) for c in counts]
            mask = torch.stack(rows)
            if scores.is_cuda:
                mask = mask.cuda(scores.get_device())
            valid = torch.sum(mask, dim=-1).tolist()
            return (scores * mask).sum() / sum(valid)


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return masked_loss(self(batch), [3, 4])
        """,
    "a CPU mask moved only on a CUDA device type": """
        def masked_loss(scores, counts):
            mask = torch.tensor(counts)
            if scores.device.type == "cuda":
                mask = mask.to(scores.device)
            valid = mask.tolist()
            return scores.sum() / sum(valid)


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return masked_loss(self(batch), [3, 4])
        """,
    "a recursive helper's counts, passed numbers by every call": """
        def rising(x, n):
            return float(x) * n


        def series(k, j, x):
            if k == 0:
                return torch.ones_like(x)
            out = x * series(k - 1, j, x)
            if j < 0:
                out = out / rising(k + j + 1, -2 * j)
            return out


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                x = self(batch)
                return torch.stack([series(k, k - 2, x) for k in range(4)], dim=-1).sum()
        """,
    "a CPU schedule's timesteps iterated in a sampling loop": """
        class Schedule:
            def __init__(self, steps):
                self.set_steps(steps)

            def set_steps(self, steps):
                self.timesteps = torch.linspace(1.0, 1e-3, steps)


        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.schedule = Schedule(50)

            def validation_step(self, batch, batch_idx):
                x = torch.randn_like(batch)
                for t in self.schedule.timesteps:
                    step = torch.full((x.shape[0],), t.item(), device=self.device)
                    x = x - self(x, step)
                return x.mean()
        """,
    "a print before the program exits": """
        import sys


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                out = self(batch)
                if self.strict:
                    print(out.mean())
                    sys.exit(1)
                return out.sum()
        """,
}

HOST_SHAPES_REPORTED = {
    "a read in the loop over batches inside the epoch loop": (
        """
        def main(model, optimizer, loader, epochs):
            for epoch in range(epochs):
                for x, y in loader:
                    loss = (model(x) - y).pow(2).mean()
                    loss.backward()
                    optimizer.step()
                    print(epoch, loss.item())


        if __name__ == "__main__":
            main(None, None, [], 3)
        """,
        [("TPU101", 7)],
    ),
    "a buffer moved to the CPU or the XLA device": (
        """
        import pickle


        def gather_objects(data, on_tpu):
            device = torch.device("xla" if on_tpu else "cpu")
            payload = torch.ByteTensor(list(pickle.dumps(data))).to(device=device)
            count = torch.tensor([payload.numel()], device=payload.device)
            return count.item()


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                self.log("n", gather_objects(batch_idx, True))
                return self(batch).sum()
        """,
        [("TPU101", 8)],
    ),
    "a collate that makes a tensor of the counts": (
        """
        class Pairs(torch.utils.data.Dataset):
            def __getitem__(self, i):
                row = self.rows[i]
                return {"ids": torch.tensor(row), "count": len(row)}

            def collate_fn(self, items):
                return {
                    "ids": torch.stack([x["ids"] for x in items]),
                    "count": torch.tensor([x["count"] for x in items]),
                }


        class M(L.LightningModule):
            def train_dataloader(self):
                data = Pairs()
                return torch.utils.data.DataLoader(data, collate_fn=data.collate_fn)

            def training_step(self, batch, batch_idx):
                count = batch["count"]
                if max(count) != 0:
                    return self(batch["ids"]).sum()
                return self(batch["ids"]).mean()
        """,
        [("TPU104", 20)],
    ),
    "a helper also called with a tensor": (
        """
        def rising(x, n):
            return float(x) * n


        def series(k, j, x):
            if k == 0:
                return torch.ones_like(x)
            out = x * series(k - 1, j, x)
            if j < 0:
                out = out / rising(k + j + 1, -2 * j)
            return out


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                x = self(batch)
                scale = rising(x.mean(), 2)
                return torch.stack([series(k, k - 2, x) for k in range(4)], dim=-1).sum() * scale
        """,
        [("TPU103", 2)],
    ),
    "a schedule's timesteps moved to the device": (
        """
        class Schedule:
            def __init__(self, steps):
                self.timesteps = torch.linspace(1.0, 1e-3, steps)

            def to(self, device):
                self.timesteps = self.timesteps.to(device)
                return self


        class M(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.schedule = Schedule(50)

            def validation_step(self, batch, batch_idx):
                x = torch.randn_like(batch)
                for t in self.schedule.timesteps:
                    step = torch.full((x.shape[0],), t.item(), device=self.device)
                    x = x - self(x, step)
                return x.mean()
        """,
        [("TPU101", 18)],
    ),
    "a print before an exit that ends the step's own body (debugging code that runs)": (
        """
        import sys


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                out = self(batch)
                print(out.mean())
                sys.exit(0)
        """,
        [("TPU103", 7)],
    ),
    "a CPU mask moved with .to(x.device)": (
        """
        def masked_loss(scores, counts):
            mask = torch.tensor(counts)
            mask = mask.to(scores.device)
            valid = mask.tolist()
            return scores.sum() / sum(valid)


        class M(L.LightningModule):
            def training_step(self, batch, batch_idx):
                return masked_loss(self(batch), [3, 4])
        """,
        [("TPU103", 4)],
    ),
}


@pytest.mark.parametrize("name", sorted(HOST_SHAPES_SILENT))
def test_host_shapes_stay_silent(name: str) -> None:
    assert codes(HOST_SHAPES_SILENT[name]) == []


@pytest.mark.parametrize("name", sorted(HOST_SHAPES_REPORTED))
def test_device_shapes_beside_them_stay_reported(name: str) -> None:
    source, expected = HOST_SHAPES_REPORTED[name]
    assert codes(source) == expected


CRF_HEAD = "from torchcrf import CRF\n\n\n"
CRF_DECODE = """
    class Tagger(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.encoder = nn.Linear(8, n)
            self.crf = CRF(n, batch_first=True)

        def forward(self, x):
            return self.encoder(x)


    class M(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.tagger = Tagger(5)

        def validation_step(self, batch, batch_idx):
            x, mask, gold = batch
            paths = self.tagger.crf.decode(self(x), mask)
            names = []
            for path in paths:
                path = [tag if tag != self.pad_tag else 0 for tag in path]
                names.append([self.tag_names[int(tag)] for tag in path[1:-1]])
            return names
"""


def test_decoded_crf_paths_are_python_lists() -> None:
    # torchcrf's `CRF.decode` returns a list of lists of ints: no tensor to read
    assert codes(CRF_HEAD + textwrap.dedent(CRF_DECODE)) == []


def test_a_decode_of_another_library_object_stays_a_tensor() -> None:
    source = CRF_HEAD + textwrap.dedent(CRF_DECODE).replace(
        "self.crf = CRF(n, batch_first=True)", "self.crf = nn.Linear(n, n)"
    )
    assert codes(source) == [("TPU104", 25), ("TPU103", 26)]


TOKENIZER_STEP = """
    from transformers import AutoTokenizer


    class M(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.tokenizer = AutoTokenizer.from_pretrained("some/model")

        def validation_step(self, batch, batch_idx):
            ids = self.tokenizer(batch["text"], truncation=True)["input_ids"]
            longest = max(len(row) for row in ids)
            for row in ids:
                if row[0] != self.tokenizer.cls_token_id:
                    longest += 1
            return self(batch["x"]).sum() + longest
"""


def test_a_tokenizers_ids_without_return_tensors_are_python_lists() -> None:
    assert codes(TOKENIZER_STEP) == []


def test_a_tokenizers_ids_with_return_tensors_stay_tensors() -> None:
    source = TOKENIZER_STEP.replace("truncation=True", 'return_tensors="pt"').replace(
        '["input_ids"]', '["input_ids"].to(self.device)'
    )
    assert codes(source) == [("TPU104", 13)]
