"""GM503: a random rotation applied to the coordinate channels of the features but not to the
direction channels after them; benign twin, every 3-vector rotated."""

from __future__ import annotations

from typing import Iterator

from benchmarks.ecosystem.mutators.base import Edit, Operator, Source, insert_before
from benchmarks.ecosystem.mutators.structure import feature_arg, forward_sites, torch_bound

_ROTATION = "rot = torch.linalg.qr(torch.randn(3, 3))[0]"


def _rotate(src: Source, parts: str, what: str) -> Iterator[Edit]:
    if not torch_bound(src):
        return
    for _, call, stmt in forward_sites(src):
        feature = feature_arg(call)
        if feature is not None:
            x = src.code(feature)
            yield Edit(insert_before(stmt, _ROTATION, f"{x} = torch.cat([{parts.format(x=x)}], dim=-1)"),
                       f"{what} of `{x}` rotated")


def rotate_coordinates(src: Source) -> Iterator[Edit]:
    return _rotate(src, "{x}[..., :3] @ rot, {x}[..., 3:]", "coordinates but not directions")


def rotate_all(src: Source) -> Iterator[Edit]:
    return _rotate(src, "{x}[..., :3] @ rot, {x}[..., 3:6] @ rot, {x}[..., 6:9] @ rot",
                   "coordinates, tangents and normals")


OPERATORS = [
    Operator("gm503.rotate-coordinates", "GM503", rotate_coordinates, (".backward(", "training_step")),
    Operator("gm503.rotate-all", "GM503", rotate_all, (".backward(", "training_step"), benign=True),
]
