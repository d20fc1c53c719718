"""A small Keras classifier on MNIST-shaped data, generated on the spot.

The labels follow from the images (which quadrant is brightest, and whether the image is
dark or light overall), so the network has something real to learn and the loss falls.
TensorFlow 2 places the model on the GPU by itself when it finds one.
"""
import argparse

import numpy as np
import tensorflow as tf

NUM_CLASSES = 8


def make_dataset(rng, count):
    """28x28 grey images; the class is the brightest quadrant, plus 4 if the image is light."""
    images = rng.uniform(0.0, 1.0, (count, 28, 28, 1)).astype(np.float32)
    quadrant = rng.randint(0, 4, size=count)
    light = rng.randint(0, 2, size=count)
    for i in range(count):
        y, x = divmod(quadrant[i], 2)
        images[i, y * 14:(y + 1) * 14, x * 14:(x + 1) * 14, 0] += 1.0
        images[i] *= 0.5 + light[i]
    return images, quadrant + 4 * light


def build_model():
    return tf.keras.Sequential([
        tf.keras.layers.Input(shape=(28, 28, 1)),
        tf.keras.layers.Conv2D(16, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(32, 3, activation="relu"),
        tf.keras.layers.GlobalAveragePooling2D(),
        tf.keras.layers.Dense(NUM_CLASSES),
    ])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=8192)
    args = parser.parse_args()

    print(f"GPUs: {tf.config.list_physical_devices('GPU')}")
    rng = np.random.RandomState(0)
    images, labels = make_dataset(rng, args.samples)
    model = build_model()
    model.compile(optimizer="adam",
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(images, labels, batch_size=128, epochs=args.epochs, validation_split=0.1, verbose=2)


if __name__ == "__main__":
    main()
