"""A tiny Mask R-CNN-style mask head, trained in TensorFlow 1 graph mode.

It stands in for the real Mask R-CNN training loop: the same stack (tensorflow-gpu 1.6,
CUDA 9.0, cuDNN 7) has to load, place convolutions on the GPU and make the loss go down.
The data are generated: random images, each with one bright rectangle whose mask the
network learns to predict.
"""
import argparse
import time

import numpy as np
import tensorflow as tf

IMAGE_SIZE = 64


def make_batch(rng, batch_size):
    """Images with one bright rectangle on noise, and the rectangle's mask."""
    images = rng.uniform(0.0, 0.3, (batch_size, IMAGE_SIZE, IMAGE_SIZE, 3)).astype(np.float32)
    masks = np.zeros((batch_size, IMAGE_SIZE, IMAGE_SIZE, 1), dtype=np.float32)
    for i in range(batch_size):
        y, x = rng.randint(0, IMAGE_SIZE // 2, size=2)
        h, w = rng.randint(8, IMAGE_SIZE // 2, size=2)
        images[i, y:y + h, x:x + w, :] += 0.6
        masks[i, y:y + h, x:x + w, 0] = 1.0
    return images, masks


def mask_head(images):
    """Two strided convolutions down, one transposed convolution back up: per-pixel logits."""
    net = tf.layers.conv2d(images, 32, 3, strides=2, padding="same", activation=tf.nn.relu)
    net = tf.layers.conv2d(net, 64, 3, strides=2, padding="same", activation=tf.nn.relu)
    net = tf.layers.conv2d_transpose(net, 32, 4, strides=4, padding="same",
                                     activation=tf.nn.relu)
    return tf.layers.conv2d(net, 1, 1, padding="same")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()

    images = tf.placeholder(tf.float32, [None, IMAGE_SIZE, IMAGE_SIZE, 3], name="images")
    masks = tf.placeholder(tf.float32, [None, IMAGE_SIZE, IMAGE_SIZE, 1], name="masks")
    logits = mask_head(images)
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=masks, logits=logits))
    train_op = tf.train.AdamOptimizer(1e-3).minimize(loss)

    config = tf.ConfigProto(allow_soft_placement=True)
    config.gpu_options.allow_growth = True
    rng = np.random.RandomState(0)
    print("GPU available: {}".format(tf.test.is_gpu_available(cuda_only=True)))
    with tf.Session(config=config) as session:
        session.run(tf.global_variables_initializer())
        start = time.time()
        for step in range(1, args.steps + 1):
            batch_images, batch_masks = make_batch(rng, args.batch_size)
            _, value = session.run([train_op, loss],
                                   feed_dict={images: batch_images, masks: batch_masks})
            if step == 1 or step % 50 == 0 or step == args.steps:
                print("step {:4d}  loss {:.4f}".format(step, value))
        print("{} steps in {:.1f} s".format(args.steps, time.time() - start))


if __name__ == "__main__":
    main()
