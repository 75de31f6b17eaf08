"""A small image classifier trained on random data.

It runs fine on a laptop. On a GPU machine it crashes, more than once, and
it is slower than it needs to be: run `devlint examples/` to see where,
before you pay for the GPU hour.
"""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class SmallConvNet(nn.Module):
    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear(16, num_classes)
        self.class_bias = torch.zeros(num_classes)          # a plain attribute: never moves

    def forward(self, x):
        h = self.features(x).flatten(1)
        noise = torch.randn(h.shape[0], h.shape[1]) * 0.01   # made on the CPU
        return self.classifier(h + noise) + self.class_bias


def make_loader(n: int = 256) -> DataLoader:
    images = torch.randn(n, 3, 32, 32)
    labels = torch.randint(0, 10, (n,))
    return DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = SmallConvNet()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)   # built before the move
    model.to(device)
    criterion = nn.CrossEntropyLoss()
    loader = make_loader()

    for epoch in range(2):
        total = 0.0
        for images, labels in loader:
            images.to(device)                    # result thrown away
            logits = model(images)               # images are still on the CPU
            loss = criterion(logits, labels)     # labels were never moved
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()                 # waits for the GPU every step
        print(f"epoch {epoch}: loss {total / len(loader):.3f}")

    with torch.no_grad():
        images, labels = next(iter(loader))
        predictions = model(images.to(device)).argmax(dim=1)
        accuracy = np.mean(predictions.numpy() == labels.numpy())   # GPU tensor to numpy
        print(f"accuracy: {accuracy:.2f}")


if __name__ == "__main__":
    main()
