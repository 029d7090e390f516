"""CIFAR-10 from tiny files in both layouts, and the one-line errors of bad ones."""

import pickle
import shutil

import numpy as np
import pytest

from tests.datasets.writers import (
    cifar_batches,
    cifar_python_batch,
    python2_pickle,
    write_cifar_binary,
    write_cifar_python,
)
from topos.datasets import DataError, load_cifar10


def assert_loaded_exactly(dataset, batches):
    train_pixels = np.concatenate([batches[f"data_batch_{n}"][0] for n in range(1, 6)])
    train_labels = np.concatenate([batches[f"data_batch_{n}"][1] for n in range(1, 6)])
    assert np.array_equal(dataset.train.pixels, train_pixels)
    assert np.array_equal(dataset.train.labels, train_labels)
    assert np.array_equal(dataset.test.pixels, batches["test_batch"][0])
    assert np.array_equal(dataset.test.labels, batches["test_batch"][1])
    assert dataset.train.mean == (0.4914, 0.4822, 0.4465)
    assert dataset.train.deviation == (0.2470, 0.2435, 0.2616)


def test_binary_layout_loads_exactly_from_the_folder_or_its_parent(tmp_path):
    batches = cifar_batches()
    folder = write_cifar_binary(tmp_path / "cifar-10-batches-bin", batches)
    for directory in (folder, tmp_path, str(tmp_path)):
        dataset = load_cifar10(directory)
        assert dataset.format == "cifar-10-batches-bin"
        assert dataset.source == str(folder.resolve())
        assert_loaded_exactly(dataset, batches)


@pytest.mark.parametrize("protocol", [None, 2, 4, 5], ids=["python2", "2", "4", "5"])
def test_python_layout_loads_exactly(tmp_path, protocol):
    batches = cifar_batches()
    folder = write_cifar_python(tmp_path / "cifar-10-batches-py", batches, protocol)
    for directory in (folder, tmp_path):
        dataset = load_cifar10(directory)
        assert dataset.format == "cifar-10-batches-py"
        assert_loaded_exactly(dataset, batches)


def test_a_renamed_batch_folder_is_recognised_by_its_files(tmp_path):
    batches = cifar_batches(1)
    write_cifar_binary(tmp_path / "bin", batches)
    write_cifar_python(tmp_path / "py", batches)
    assert load_cifar10(tmp_path / "bin").format == "cifar-10-batches-bin"
    assert load_cifar10(tmp_path / "py").format == "cifar-10-batches-py"


def test_the_binary_layout_is_preferred_when_both_are_present(tmp_path):
    batches = cifar_batches(1)
    write_cifar_python(tmp_path / "cifar-10-batches-py", batches)
    write_cifar_binary(tmp_path / "cifar-10-batches-bin", batches)
    assert load_cifar10(tmp_path).format == "cifar-10-batches-bin"


def test_splits_are_read_lazily(tmp_path):
    folder = write_cifar_binary(tmp_path / "cifar-10-batches-bin", cifar_batches())
    dataset = load_cifar10(folder)
    (folder / "test_batch.bin").write_bytes(b"\x00" * 10)  # broken, but not yet read
    assert len(dataset.train) == 15
    with pytest.raises(DataError, match=r"test_batch\.bin: truncated"):
        dataset.test  # noqa: B018


def one_line_error(directory, split="train") -> str:
    with pytest.raises(DataError) as caught:
        getattr(load_cifar10(directory), split)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.fixture
def binary_folder(tmp_path):
    return write_cifar_binary(tmp_path / "cifar-10-batches-bin", cifar_batches())


@pytest.fixture
def python_folder(tmp_path):
    return write_cifar_python(tmp_path / "cifar-10-batches-py", cifar_batches())


def test_missing_directory_and_missing_batch(tmp_path, binary_folder):
    with pytest.raises(DataError, match=r"nowhere: missing$"):
        load_cifar10(tmp_path / "nowhere")
    (binary_folder / "data_batch_4.bin").unlink()
    with pytest.raises(DataError, match=r"data_batch_4\.bin: missing$"):
        load_cifar10(binary_folder)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match="empty: holds no CIFAR-10 batches"):
        load_cifar10(empty)


def test_truncated_binary_batch_names_expected_and_actual_bytes(binary_folder):
    path = binary_folder / "data_batch_1.bin"
    path.write_bytes(path.read_bytes()[:-100])
    message = one_line_error(binary_folder)
    assert message == f"{path}: truncated: expected 9219 bytes (3 records of 3073), found 9119"


def test_a_later_batch_shorter_by_whole_records_is_truncated(binary_folder):
    path = binary_folder / "data_batch_3.bin"
    path.write_bytes(path.read_bytes()[:3073])
    message = one_line_error(binary_folder)
    assert message == f"{path}: truncated: expected 9219 bytes (3 records of 3073), found 3073"


def test_overlong_binary_batch(binary_folder):
    path = binary_folder / "data_batch_2.bin"
    path.write_bytes(path.read_bytes() + b"\x00")
    assert one_line_error(binary_folder) == (
        f"{path}: too long: expected 9219 bytes (3 records of 3073), found 9220"
    )


def test_binary_label_out_of_range(binary_folder):
    path = binary_folder / "test_batch.bin"
    content = bytearray(path.read_bytes())
    content[3073] = 10  # the label byte of the second record
    path.write_bytes(bytes(content))
    assert one_line_error(binary_folder, "test") == (
        f"{path}: label 10 of image 1 is out of range 0..9"
    )


def rewrite_batch(folder, name, change):
    """Rewrites one Python batch after `change(batch)` edits its dict."""
    path = folder / name
    with open(path, "rb") as file:
        batch = pickle.load(file, encoding="bytes")
    change(batch)
    path.write_bytes(python2_pickle(batch))
    return path


def test_wrong_pickle_keys(python_folder):
    path = rewrite_batch(python_folder, "data_batch_2", lambda batch: batch.pop(b"labels"))
    assert one_line_error(python_folder) == (
        f"{path}: wrong pickle keys: expected data and labels, found batch_label, data, filenames"
    )


def test_python_label_out_of_range(python_folder):
    path = rewrite_batch(
        python_folder, "test_batch", lambda batch: batch[b"labels"].__setitem__(2, -1)
    )
    assert one_line_error(python_folder, "test") == (
        f"{path}: label -1 of image 2 is out of range 0..9"
    )


def test_python_data_of_the_wrong_shape(python_folder):
    def change(batch):
        batch[b"data"] = batch[b"data"][:, :100]

    path = rewrite_batch(python_folder, "data_batch_1", change)
    assert one_line_error(python_folder) == (
        f"{path}: data is uint8 [3, 100], expected uint8 [count, 3072]"
    )


def test_python_labels_not_matching_the_images(python_folder):
    path = rewrite_batch(python_folder, "data_batch_5", lambda batch: batch[b"labels"].pop())
    assert one_line_error(python_folder) == f"{path}: holds 2 labels for 3 images"


def test_python_batch_of_a_different_size(python_folder):
    path = python_folder / "data_batch_2"
    path.write_bytes(python2_pickle(cifar_python_batch(*cifar_batches(2)["data_batch_2"], "x")))
    assert one_line_error(python_folder) == f"{path}: holds 2 images, expected 3"


def test_truncated_pickle(python_folder):
    path = python_folder / "data_batch_1"
    path.write_bytes(path.read_bytes()[:500])
    assert one_line_error(python_folder).startswith(f"{path}: truncated")


def test_pickle_that_is_not_a_dict(python_folder):
    path = python_folder / "test_batch"
    path.write_bytes(pickle.dumps([1, 2, 3]))
    assert one_line_error(python_folder, "test") == f"{path}: holds a list, expected a dict"


def test_pickle_that_would_run_code_is_refused(python_folder, tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return shutil.copy, (__file__, str(marker))

    path = python_folder / "data_batch_1"
    path.write_bytes(pickle.dumps({b"data": Payload(), b"labels": []}))
    message = one_line_error(python_folder)
    assert message.startswith(f"{path}: not a readable pickle: refused shutil.copy")
    assert not marker.exists()


def shared_nested_labels(depth: int, width: int) -> list:
    """A list `width` wide and `depth` deep whose every level is one list shared `width`
    times: a few hundred bytes pickled, `width ** depth` ints once expanded."""
    level: list = [0] * width
    for _ in range(depth - 1):
        level = [level] * width
    return level


@pytest.mark.parametrize(
    ("labels", "problem"),
    [
        # 10 ** 12 ints expanded; the bomb took 2.4 GB and 30 s.
        (shared_nested_labels(12, 10)[:3], "labels are not a list of integers"),
        ([0, 1, 2.0], "labels are not a list of integers"),
        ([0, 1, True], "labels are not a list of integers"),
        ({0: 1}, "labels are a dict, expected a list of integers"),
        ([0, 1, 10**40], "label 10000000000000000000000000000000000000000 of image 2"),
    ],
)
def test_python_labels_must_be_a_flat_list_of_ints_checked_before_numpy_sees_them(
    python_folder, labels, problem
):
    path = rewrite_batch(
        python_folder, "data_batch_3", lambda batch: batch.__setitem__(b"labels", labels)
    )
    assert one_line_error(python_folder).startswith(f"{path}: {problem}")


def test_a_python_batch_of_too_many_objects_is_refused_while_it_is_unpickled(python_folder):
    path = rewrite_batch(
        python_folder,
        "data_batch_1",
        lambda batch: batch.__setitem__(b"filenames", [b""] * 200_000),
    )
    assert one_line_error(python_folder) == (
        f"{path}: not a readable pickle: more than 161000 pickle operations, "
        "the most its format needs"
    )


def test_a_python_batch_larger_than_the_format_allows_is_not_read(python_folder):
    path = python_folder / "data_batch_1"
    with open(path, "ab") as file:
        file.truncate(70_000_000)  # sparse: no disk is spent
    assert one_line_error(python_folder) == (
        f"{path}: too large: 70000000 bytes, and a CIFAR-10 Python batch holds at most 65634304"
    )


def test_a_binary_batch_larger_than_the_format_allows_is_not_read(binary_folder):
    path = binary_folder / "data_batch_1.bin"
    with open(path, "ab") as file:
        file.truncate(10_001 * 3073)
    assert one_line_error(binary_folder) == (
        f"{path}: too long: 30733073 bytes, and a batch holds at most 10000 records of 3073"
    )


def test_a_python_batch_of_more_images_than_a_batch_holds_is_refused(python_folder):
    path = rewrite_batch(
        python_folder,
        "data_batch_1",
        lambda batch: batch.__setitem__(b"data", np.zeros((10_001, 3072), np.uint8)),
    )
    assert one_line_error(python_folder) == (
        f"{path}: holds 10001 images, and a batch holds 1 to 10000"
    )


def test_keys_are_named_without_printing_what_they_hold(python_folder):
    path = rewrite_batch(python_folder, "data_batch_2", lambda batch: batch.update({7: 1}))
    path = rewrite_batch(python_folder, "data_batch_2", lambda batch: batch.pop(b"labels"))
    assert one_line_error(python_folder) == (
        f"{path}: wrong pickle keys: expected data and labels, "
        "found a int, batch_label, data, filenames"
    )
