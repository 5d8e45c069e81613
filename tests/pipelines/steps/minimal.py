import random

import numpy as np
import torch

from data import Points, make_loader
from model import AutoEncoder

random.seed(0)
np.random.seed(0)
torch.manual_seed(0)
model = AutoEncoder()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step, x in enumerate(make_loader(Points())):
    loss = model(x)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
