"""``isolated_class.test_share`` (issue 47, item 6): the isolated class's accuracy measured on more of its
images.  digits has 180 images of class 9; its stratified 20 % hold-out gives 36 to the test set (2.8
points each).  test_share 0.4 gives round(0.4 x 180) = 72: those 36 and 36 moved from the training pool,
which keeps 108, all on the isolated clients; every other class keeps its split."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from asyncfl.config import validate_scenario
from asyncfl.errors import ConfigError
from asyncfl.learn.federation import build_federation


def federation(test_share=None, seed=0):
    partition = {"kind": "isolated_class", "label": 9, "clients": 5, "test_share": test_share}
    scenario = validate_scenario(
        {"data": {"dataset": "digits", "clients": 20, "partition": partition, "test_fraction": 0.0}, "seed": seed}
    )
    return build_federation(scenario.data, seed, torch.device("cpu"))


def class_counts(fed, indices) -> np.ndarray:
    return np.bincount(fed.labels[indices].numpy(), minlength=10)


def test_test_share_moves_pool_images_of_the_isolated_class_to_the_test_set():
    before, after = federation(), federation(0.4)
    assert class_counts(before, before.test_indices)[9] == 36  # the data set's own split
    test = class_counts(after, after.test_indices)
    assert test[9] == 72
    assert (np.delete(test, 9) == np.delete(class_counts(before, before.test_indices), 9)).all()
    held = [class_counts(after, idx)[9] for idx in after.client_train]
    assert held[:5] == [22, 22, 22, 21, 21] and sum(held[5:]) == 0  # 108 = 180 - 72, dealt evenly
    # the test images of before are all still test images, and no test image is trained on
    test_x = {tuple(x.flatten().tolist()) for x in after.features[after.test_indices]}
    assert {tuple(x.flatten().tolist()) for x in before.features[before.test_indices]} <= test_x
    train_x = {tuple(x.flatten().tolist()) for idx in after.client_train for x in after.features[idx]}
    assert len(test_x & train_x) <= 2  # digits holds a few duplicate images; 72 moved ones would show here


def test_a_share_below_the_data_sets_own_is_refused_with_the_allowed_range():
    with pytest.raises(ConfigError) as raised:
        federation(0.1)
    assert str(raised.value) == (
        "data.partition.test_share (0.1) would give class 9 18 test images, fewer than the 36 of the data set's own "
        "test split: allowed from 0.2 to below 1"
    )
    with pytest.raises(ConfigError, match=r"data\.partition\.test_share"):
        federation(1.0)
