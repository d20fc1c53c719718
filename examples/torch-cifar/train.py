"""A small CNN trained on random CIFAR-shaped tensors, on the GPU when there is one.

The targets come from a fixed random "teacher" network, so the task is learnable and the
loss falls without downloading CIFAR-10. Reports the device, the loss, and steps per second.
"""
import argparse
import time

import torch
from torch import nn


def small_cnn(num_classes=10):
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(128, num_classes),
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--cpu", action="store_true", help="train on the CPU even with a GPU")
    args = parser.parse_args()

    use_cuda = torch.cuda.is_available() and not args.cpu
    device = torch.device("cuda" if use_cuda else "cpu")
    name = torch.cuda.get_device_name(device) if use_cuda else "CPU"
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, training on {name}")

    torch.manual_seed(0)
    teacher = small_cnn().to(device).eval()
    model = small_cnn().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    start = time.time()
    for step in range(1, args.steps + 1):
        images = torch.randn(args.batch_size, 3, 32, 32, device=device)
        with torch.no_grad():
            labels = teacher(images).argmax(dim=1)
        loss = loss_fn(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step == 1 or step % 50 == 0 or step == args.steps:
            print(f"step {step:4d}  loss {loss.item():.4f}")
    if use_cuda:
        torch.cuda.synchronize()
    elapsed = time.time() - start
    print(f"{args.steps} steps in {elapsed:.1f} s ({args.steps / elapsed:.1f} steps/s)")


if __name__ == "__main__":
    main()
