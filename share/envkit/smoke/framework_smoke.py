"""The framework half of `envkit smoke --framework`: does the prefix's PyTorch (or TensorFlow, or
JAX) train a small network on the GPU with the prefix's CUDA and cuDNN?

A conv net (conv 3x3, 1 -> 8 channels, ReLU, dense 2048 -> 4) learns the orientation of a bar in
512 generated 16x16 images, like the smoke program (smoke.cu) but through the framework, so the
framework's own CUDA build, cuDNN convolutions and cuBLAS matrix products are exercised. TF32 is
off. It passes when the training-set loss at least halves in the steps.

Whatever it does, it also says which shared libraries the process really loaded: the text of
/proc/self/maps after the import and after the device work ("maps", a list of snapshots; envkit
picks the CUDA libraries out of them and checks each is the prefix's), where the framework module
lives ("framework_path") and the CUDA and cuDNN versions the framework states ("cuda", "cudnn").
With --libraries-only it imports the framework, initialises CUDA when a GPU is visible (a tiny
matrix product and convolution, so lazily loaded libraries load too), and reports that, with
status "skip": no training.

usage: python3 framework_smoke.py [--steps N] [--seed S] [--cpu | --libraries-only]
Prints one JSON object on stdout; exit 0 pass, 1 fail, 77 skip (none of torch, tensorflow, jax
imports, or --libraries-only), 2 bad arguments.
"""

import argparse
import json
import random
import sys
import time

IMAGE = 16
BAR = 7
CLASSES = 4
SAMPLES = 512
BATCH = 64
LEARNING_RATE = 0.1
# (dx, dy) per class: horizontal, vertical, diagonal, anti-diagonal.
DIRECTIONS = [(1, 0), (0, 1), (1, 1), (-1, 1)]


def make_data(seed):
    """Images (list of SAMPLES x IMAGE*IMAGE floats) and labels: a bright bar on noise."""
    rng = random.Random(seed)
    images, labels = [], []
    for i in range(SAMPLES):
        label = i % CLASSES
        dx, dy = DIRECTIONS[label]
        pixels = [rng.random() * 0.3 for _ in range(IMAGE * IMAGE)]
        # A start from which the whole bar stays inside the image.
        xs = range(BAR - 1, IMAGE) if dx < 0 else range(0, IMAGE - (BAR - 1) * dx)
        x0 = rng.choice(list(xs))
        y0 = rng.randrange(0, IMAGE - (BAR - 1) * dy)
        for k in range(BAR):
            pixels[(y0 + k * dy) * IMAGE + x0 + k * dx] = 0.8 + rng.random() * 0.2
        images.append(pixels)
        labels.append(label)
    return images, labels


def result(status, reason="", **fields):
    return dict({"status": status, "reason": reason}, **fields)


MAPS = []  # /proc/self/maps snapshots, file-backed lines only


def snapshot_maps():
    """Keeps the process's mapped files now (after an import, after CUDA started)."""
    try:
        with open("/proc/self/maps") as maps:
            MAPS.append("".join(line for line in maps if "/" in line))
    except OSError:  # not Linux: nothing to report
        pass


def attempt(function, default=None):
    """function(), or default when it raises: a stated version is a bonus, never the failure."""
    try:
        return function()
    except Exception:
        return default


def cudnn_text(number):
    """cuDNN's version number as text: 90100 -> 9.1.0 (cuDNN 9), 8907 -> 8.9.7 (cuDNN 8)."""
    if not isinstance(number, int) or number <= 0:
        return None if number is None else str(number)
    if number >= 90000:
        return "%d.%d.%d" % (number // 10000, number // 100 % 100, number % 100)
    return "%d.%d.%d" % (number // 1000, number // 100 % 10, number % 100)


def cuda_text(number):
    """A CUDA runtime version number as text: 12040 -> 12.4."""
    if not isinstance(number, int) or number <= 0:
        return None if number is None else str(number)
    return "%d.%d" % (number // 1000, number % 1000 // 10)


def stated_versions(name, module):
    """The CUDA and cuDNN versions the framework states: torch's are the build's CUDA and the
    loaded cuDNN, TensorFlow's its build's, jax's the loaded ones (where its plugin says)."""
    if name == "torch":
        return {"cuda": attempt(lambda: module.version.cuda),
                "cudnn": cudnn_text(attempt(lambda: module.backends.cudnn.version()))}
    if name == "tensorflow":
        build = attempt(lambda: module.sysconfig.get_build_info(), {}) or {}
        return {"cuda": build.get("cuda_version"), "cudnn": build.get("cudnn_version")}
    if name == "jax":
        def versions():
            from jax._src.lib import cuda_versions  # None without the CUDA plugin
            return cuda_versions
        found = attempt(versions)
        if found is None:
            return {"cuda": None, "cudnn": None}
        return {"cuda": cuda_text(attempt(found.cuda_runtime_get_version)),
                "cudnn": cudnn_text(attempt(found.cudnn_get_version))}
    return {}


def start_cuda(name, module):
    """Initialises CUDA with a tiny matrix product and convolution, when a GPU is visible, so the
    libraries loaded on first use (cuBLAS, cuDNN's engines) are loaded too. The GPU's name, or
    None without one."""
    if name == "torch":
        if not module.cuda.is_available():
            return None
        a = module.ones(8, 8, device="cuda")
        (a @ a).sum().item()
        module.nn.functional.conv2d(a.reshape(1, 1, 8, 8), a[:3, :3].reshape(1, 1, 3, 3)).sum().item()
        return module.cuda.get_device_name(0)
    if name == "tensorflow":
        gpus = module.config.list_physical_devices("GPU")
        if not gpus:
            return None
        with module.device("/GPU:0"):
            a = module.ones((1, 8, 8, 1))
            float(module.reduce_sum(module.matmul(a[0, :, :, 0], a[0, :, :, 0])))
            float(module.reduce_sum(module.nn.conv2d(a, module.ones((3, 3, 1, 1)), 1, "SAME")))
        return gpus[0].name
    if name == "jax":
        gpus = [d for d in module.devices() if d.platform == "gpu"]
        if not gpus:
            return None
        import jax.numpy as jnp
        a = module.device_put(jnp.ones((1, 1, 8, 8)), gpus[0])
        float((a[0, 0] @ a[0, 0]).sum())
        float(module.lax.conv_general_dilated(a, jnp.ones((1, 1, 3, 3)), (1, 1), "SAME").sum())
        return str(gpus[0])
    return None


def libraries_only(name, module):
    device = start_cuda(name, module)
    return result("skip", "imported %s and %s; no training asked" % (
        name, "initialised CUDA on %s" % device if device else "saw no GPU"),
        framework=name, version=getattr(module, "__version__", None),
        device=device or "none")


def run_torch(torch, args):
    use_gpu = not args.cpu
    if use_gpu and not torch.cuda.is_available():
        return result("fail", "torch %s cannot use the GPU (torch.cuda.is_available() is False; "
                      "torch built for CUDA %s)" % (torch.__version__, torch.version.cuda),
                      framework="torch", version=torch.__version__)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(args.seed)
    device = torch.device("cuda" if use_gpu else "cpu")
    images, labels = make_data(args.seed)
    x = torch.tensor(images, dtype=torch.float32, device=device).reshape(SAMPLES, 1, IMAGE, IMAGE)
    y = torch.tensor(labels, dtype=torch.long, device=device)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
        torch.nn.Linear(8 * IMAGE * IMAGE, CLASSES)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)
    loss_fn = torch.nn.CrossEntropyLoss()

    def full_loss():
        with torch.no_grad():
            return float(loss_fn(model(x), y))

    loss_first = full_loss()
    if use_gpu:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for step in range(args.steps):
        begin = (step * BATCH) % SAMPLES
        optimizer.zero_grad()
        loss = loss_fn(model(x[begin:begin + BATCH]), y[begin:begin + BATCH])
        loss.backward()
        optimizer.step()
    if use_gpu:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    loss_last = full_loss()
    return judged(loss_first, loss_last, seconds, args, framework="torch",
                  version=torch.__version__,
                  device=torch.cuda.get_device_name(0) if use_gpu else "cpu",
                  cuda=torch.version.cuda,
                  cudnn=str(torch.backends.cudnn.version()) if use_gpu else None)


def run_tensorflow(tf, args):
    gpus = tf.config.list_physical_devices("GPU")
    if not args.cpu and not gpus:
        return result("fail", "tensorflow %s sees no GPU" % tf.__version__,
                      framework="tensorflow", version=tf.__version__)
    tf.config.experimental.enable_tensor_float_32_execution(False)
    tf.random.set_seed(args.seed)
    images, labels = make_data(args.seed)
    device = "/GPU:0" if not args.cpu else "/CPU:0"
    with tf.device(device):
        x = tf.reshape(tf.constant(images, dtype=tf.float32), (SAMPLES, IMAGE, IMAGE, 1))
        y = tf.constant(labels, dtype=tf.int64)
        model = tf.keras.Sequential([
            tf.keras.Input(shape=(IMAGE, IMAGE, 1)),
            tf.keras.layers.Conv2D(8, 3, padding="same", activation="relu"),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(CLASSES)])
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        optimizer = tf.keras.optimizers.SGD(learning_rate=LEARNING_RATE)
        loss_first = float(loss_fn(y, model(x)))
        start = time.perf_counter()
        for step in range(args.steps):
            begin = (step * BATCH) % SAMPLES
            with tf.GradientTape() as tape:
                loss = loss_fn(y[begin:begin + BATCH], model(x[begin:begin + BATCH]))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
        loss_last = float(loss_fn(y, model(x)))  # waits for the device
        seconds = time.perf_counter() - start
    build = tf.sysconfig.get_build_info()
    return judged(loss_first, loss_last, seconds, args, framework="tensorflow",
                  version=tf.__version__, device=device if not gpus else gpus[0].name,
                  cuda=build.get("cuda_version"), cudnn=build.get("cudnn_version"))


def run_jax(jax, args):
    devices = jax.devices("cpu") if args.cpu else [d for d in jax.devices() if d.platform == "gpu"]
    if not devices:
        return result("fail", "jax %s sees no GPU (jax.devices() is %s)"
                      % (jax.__version__, [str(d) for d in jax.devices()]),
                      framework="jax", version=jax.__version__)
    device = devices[0]
    import jax.numpy as jnp
    jax.config.update("jax_default_matmul_precision", "highest")  # no TF32
    images, labels = make_data(args.seed)
    x = jax.device_put(jnp.asarray(images, dtype=jnp.float32).reshape(SAMPLES, 1, IMAGE, IMAGE),
                       device)
    y = jax.device_put(jnp.asarray(labels, dtype=jnp.int32), device)
    # PyTorch's default initialization (uniform in +-1/sqrt(fan_in)), as run_torch trains.
    keys = jax.random.split(jax.random.PRNGKey(args.seed), 4)

    def uniform(key, shape, fan_in):
        bound = 1.0 / fan_in ** 0.5
        return jax.random.uniform(key, shape, jnp.float32, -bound, bound)

    dense_in = 8 * IMAGE * IMAGE
    params = jax.device_put({
        "conv": uniform(keys[0], (8, 1, 3, 3), 9), "conv_b": uniform(keys[1], (8,), 9),
        "dense": uniform(keys[2], (dense_in, CLASSES), dense_in),
        "dense_b": uniform(keys[3], (CLASSES,), dense_in)}, device)

    def loss_fn(p, xb, yb):
        h = jax.lax.conv_general_dilated(xb, p["conv"], (1, 1), "SAME")  # cuDNN on the GPU
        h = jax.nn.relu(h + p["conv_b"][None, :, None, None]).reshape(xb.shape[0], -1)
        logits = h @ p["dense"] + p["dense_b"]
        picked = jnp.take_along_axis(jax.nn.log_softmax(logits), yb[:, None], axis=1)
        return -jnp.mean(picked)

    @jax.jit
    def step(p, xb, yb):
        grads = jax.grad(loss_fn)(p, xb, yb)
        return jax.tree_util.tree_map(lambda w, g: w - LEARNING_RATE * g, p, grads)

    loss_first = float(loss_fn(params, x, y))
    start = time.perf_counter()
    for i in range(args.steps):
        begin = (i * BATCH) % SAMPLES
        params = step(params, x[begin:begin + BATCH], y[begin:begin + BATCH])
    jax.block_until_ready(params)
    seconds = time.perf_counter() - start
    loss_last = float(loss_fn(params, x, y))
    return judged(loss_first, loss_last, seconds, args, framework="jax", version=jax.__version__,
                  device=str(device))


def judged(loss_first, loss_last, seconds, args, **fields):
    fields.update(steps=args.steps, loss_first=loss_first, loss_last=loss_last,
                  seconds=round(seconds, 4))
    if not loss_last <= 0.5 * loss_first:  # NaN fails too
        return result("fail", "loss did not halve: %.4g -> %.4g in %d steps"
                      % (loss_first, loss_last, args.steps), **fields)
    return result("pass", **fields)


def import_framework():
    """(name, module) of the first framework installed, or (None, why none is)."""
    missing = []
    for name in ("torch", "tensorflow", "jax"):
        try:
            return name, __import__(name)
        except ModuleNotFoundError as e:
            if e.name != name:  # installed, but something it needs is not: a failure
                raise
            missing.append(name)
    return None, "none of %s is installed in this Python (%s)" % (", ".join(missing),
                                                                   sys.executable)


def run_installed_framework(args, facts):
    name, module = import_framework()
    if name is None:
        return result("skip", module)
    snapshot_maps()
    facts["framework_path"] = getattr(module, "__file__", None)
    facts.update(stated_versions(name, module))
    if args.libraries_only:
        return libraries_only(name, module)
    runners = {"torch": run_torch, "tensorflow": run_tensorflow, "jax": run_jax}
    return runners[name](module, args)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--cpu", action="store_true", help="train on the CPU")
    mode.add_argument("--libraries-only", action="store_true",
                      help="import, start CUDA where a GPU is, report the libraries; no training")
    args = parser.parse_args()
    if args.steps < 1:
        parser.error("--steps must be at least 1")

    facts = {}  # what is known of the framework whatever happens next
    try:
        report = run_installed_framework(args, facts)
    except Exception as e:  # a framework that fails to import or on the device: the finding
        report = result("fail", "%s: %s" % (type(e).__name__, e))
    snapshot_maps()  # after the device work, or what loaded before a failure
    for key, value in facts.items():
        if report.get(key) is None:
            report[key] = value
    report["maps"] = MAPS
    print(json.dumps(report))
    return {"pass": 0, "fail": 1, "skip": 77}[report["status"]]


if __name__ == "__main__":
    sys.exit(main())
