"""Forward throughput on a GPU (not part of training)."""

import torch

from pkg.model import CaptionModel

model = CaptionModel().cuda()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
tokens = torch.randint(0, 512, (64, 32), device="cuda")
start.record()
for _ in range(100):
    model(tokens)
end.record()
torch.cuda.synchronize()
print(start.elapsed_time(end) / 100)
