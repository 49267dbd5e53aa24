"""peer_torch_train.py — the PyTorch side of bench/bench_train.c: training steps per second of the same two models with
the same batch and optimizer, on 2 CPU threads. Run with Debian's python3 (python3-torch).

  train_cnn  beautiful_mnist's CNN (2x conv5 32ch, BatchNorm, maxpool, 2x conv3 64ch, BatchNorm, maxpool, Linear 576->10)
  train_mlp  784-128-10 MLP (Linear, relu, Linear)
Both: batch 512 of random 28x28 uint8 images cast to float (as the demo feeds Fashion-MNIST), sparse categorical
cross-entropy, Adam(lr=1e-3). Prints "<name> <steps/s> steps/s"."""
import sys, time
import torch
import torch.nn as nn

torch.set_num_threads(2)
torch.manual_seed(0)
BS = 512
steps_cnn = int(sys.argv[1]) if len(sys.argv) > 1 else 5
steps_mlp = int(sys.argv[2]) if len(sys.argv) > 2 else 100

def cnn():
  return nn.Sequential(nn.Conv2d(1, 32, 5), nn.ReLU(), nn.Conv2d(32, 32, 5), nn.ReLU(), nn.BatchNorm2d(32), nn.MaxPool2d(2),
                       nn.Conv2d(32, 64, 3), nn.ReLU(), nn.Conv2d(64, 64, 3), nn.ReLU(), nn.BatchNorm2d(64), nn.MaxPool2d(2),
                       nn.Flatten(1), nn.Linear(576, 10))

def mlp():
  return nn.Sequential(nn.Flatten(1), nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))

def bench(name, model, steps):
  opt = torch.optim.Adam(model.parameters(), lr=1e-3)
  x_all = torch.randint(0, 256, (4096, 1, 28, 28), dtype=torch.uint8)
  y_all = torch.randint(0, 10, (4096,))
  model.train()
  def step():
    idx = torch.randint(0, x_all.shape[0], (BS,))
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x_all[idx].float()), y_all[idx])
    loss.backward()
    opt.step()
    return loss.item()
  for _ in range(2): step()  # warm-up
  t0 = time.perf_counter()
  for _ in range(steps): step()
  dt = time.perf_counter() - t0
  print(f"{name} {steps / dt:.4g} steps/s")

bench("train_cnn", cnn(), steps_cnn)
bench("train_mlp", mlp(), steps_mlp)
