from .sbm import SBMNodeDataset, FeatureStats
from .loader import build_train_loader, build_inference_loader, prepare_batch, MaskSampler
