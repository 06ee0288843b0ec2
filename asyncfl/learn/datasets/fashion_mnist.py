"""``fashion_mnist``: Zalando's Fashion-MNIST (28x28 grey), torchvision's files under ``data.data_dir``."""

from asyncfl.learn.datasets._torchvision import IDX_NAMES, Layout, download_train_test, read_mnist, torchvision_dataset

LAYOUT = Layout(
    "fashion_mnist", "FashionMNIST/raw", IDX_NAMES, read_mnist, download_train_test("FashionMNIST"), gz_ok=True
)
DATASET = torchvision_dataset(LAYOUT, input_shape=(1, 28, 28), order=50, train_pool=60_000, test_split=10_000)
