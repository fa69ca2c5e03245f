"""streamline.Loader (python/streamline): batches as torch tensors, deterministic, resumable,
sharded, bounded, with errors that name the file. Run by ctest (python_loader):

    PYTHONPATH=build/python STREAMLINE_CLI=build/streamline /usr/bin/python3 -m unittest discover -s python/tests
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

import numpy as np

import streamline

try:
    import torch
except ImportError:
    torch = None

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
DATA_PIPELINE = os.path.join(SOURCE, "pipelines", "line_refine_data.json")
LOCAL_PIPELINE = os.path.join(SOURCE, "pipelines", "line_refine_local_data.json")
CLI = os.environ.get("STREAMLINE_CLI", os.path.join(SOURCE, "build", "streamline"))
ROOT = None


def setUpModule():
    global ROOT
    ROOT = tempfile.mkdtemp(prefix="sl_py_loader_")
    subprocess.run([CLI, "gen-data", ROOT, "--train", "3", "--val", "1", "--seed", "5"], check=True,
                   stdout=subprocess.DEVNULL)


def tearDownModule():
    shutil.rmtree(ROOT, ignore_errors=True)


def loader(**kw):
    settings = {"scan.root": os.path.join(ROOT, "train"), "batch.size": 16}
    settings.update(kw.pop("set", {}))
    return streamline.Loader(DATA_PIPELINE, set=settings, **kw)


def as_numpy(batch):
    return {k: (v.numpy() if torch is not None and isinstance(v, torch.Tensor) else v).copy() for k, v in batch.items()}


def epoch_of(ld):
    return [as_numpy(b) for b in ld]


def same(a, b):
    return len(a) == len(b) and all(x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)
                                    for x, y in zip(a, b))


class LoaderTest(unittest.TestCase):
    @unittest.skipIf(torch is None, "python3-torch is not installed")
    def test_batches_are_torch_tensors_over_the_slots_with_the_samples_values(self):
        ld = loader(set={"batch.keys": ["context", "noisy_line", "target_offset", "true_line"]})
        counted = len(ld)  # a counting pass of epoch 0, before it runs
        n = 0
        for b in ld:
            self.assertEqual(b["context"].shape, (16, 1024, 4))
            for k in ("noisy_line", "target_offset", "true_line"):
                self.assertEqual(b[k].shape, (16, 32, 3))
                self.assertEqual(b[k].dtype, torch.float32)
            self.assertEqual(b["scene_index"].shape, (16,))
            # The tensors are the right slices of the slot: the target offset moves the noisy line
            # onto the true one, and every context point lies within the crop radius (2 m,
            # horizontal) of the noisy line, in the line's frame.
            torch.testing.assert_close(b["noisy_line"] + b["target_offset"], b["true_line"], atol=1e-5, rtol=0)
            ctx, line = b["context"].double(), b["noisy_line"].double()
            a, c = line[:, :-1, None, :2], line[:, 1:, None, :2]
            p = ctx[:, None, :, :2]
            ab = c - a
            t = (((p - a) * ab).sum(-1) / (ab * ab).sum(-1).clamp_min(1e-12)).clamp(0, 1)
            d = (p - (a + t[..., None] * ab)).norm(dim=-1).min(dim=1).values
            self.assertLessEqual(d.max().item(), 2.0 + 1e-4)
            self.assertGreater(ctx[..., 3].abs().sum().item(), 0)  # intensities came along
            n += 1
        self.assertGreater(n, 3)
        self.assertEqual(counted, n)
        ld.set_epoch(0)
        self.assertEqual(len(ld), n)  # recorded by the iteration
        r = ld.report()
        self.assertTrue(r["ok"])
        self.assertIn("crop_polyline", r["table"])
        self.assertEqual([s["id"] for s in r["stages"]][-1], "_loader")
        self.assertGreater(r["python_us_per_batch"], 0)
        self.assertIn("your loop", r["bottleneck"])
        self.assertIn(r["bottleneck"], r["table"])

    def test_the_grouped_crop_comes_in_the_batches(self):
        # line_refine_local_data.json: group_points' local [B, L, K, 4] and local_count [B, L]
        # beside the rest; each group's real rows lie within its radius (1 m, horizontal) of their
        # line point (offsets from it, in the line's frame), the padding repeats the nearest row,
        # and an empty group is all zeros.
        # (aspect 1 here: ranked by plain distance, so the order can be checked from the offsets)
        ld = streamline.Loader(LOCAL_PIPELINE, set={"scan.root": os.path.join(ROOT, "train"), "batch.size": 8,
                                                    "group.aspect": 1})
        n = 0
        for b in ld:
            b = as_numpy(b)
            local, count = b["local"], b["local_count"]
            self.assertEqual(local.shape, (8, 32, 64, 4))
            self.assertEqual(count.shape, (8, 32))
            self.assertEqual(local.dtype, np.float32)
            self.assertTrue(((count >= 0) & (count <= 64)).all())
            self.assertGreater(count.mean(), 32)  # the map kind: most windows are full
            for i in range(8):
                for l in range(32):
                    c = int(count[i, l])
                    rows = local[i, l]
                    if c == 0:
                        self.assertFalse(rows.any())
                        continue
                    d = np.hypot(rows[:c, 0].astype(np.float64), rows[:c, 1].astype(np.float64))
                    self.assertLessEqual(d.max(), 1.0 + 1e-4)
                    self.assertTrue(np.all(np.diff(d) >= -1e-5))  # nearest first
                    self.assertTrue((rows[c:] == rows[0]).all())
            n += 1
            if n == 3:
                break
        self.assertEqual(n, 3)

    @unittest.skipIf(torch is None, "python3-torch is not installed")
    def test_dlpack_capsules_view_the_same_slot(self):
        ld = loader()
        run = ld._pipe.start(0, 0, 0)
        b = run.next()
        arrays = b.arrays()
        for k in b.keys():
            t = torch.utils.dlpack.from_dlpack(b.dlpack(k))
            self.assertEqual(t.data_ptr(), arrays[k].ctypes.data)  # no copy
            self.assertTrue(np.array_equal(t.numpy(), arrays[k]))
        self.assertEqual(run.held, 1)
        unused = b.dlpack("context")  # a capsule nobody consumed lets go of the batch when collected
        del arrays, b, t
        self.assertEqual(run.held, 1)
        del unused
        self.assertEqual(run.held, 0)
        run.stop()

    def test_the_same_epoch_is_the_same_batches_at_any_thread_count_and_epochs_advance(self):
        one, two = loader(threads=1), loader(threads=2)
        a, b = epoch_of(one), epoch_of(two)
        self.assertTrue(same(a, b))
        self.assertEqual(one.epoch, 1)  # a complete pass moves on to the next epoch
        c = epoch_of(one)
        self.assertFalse(same(a[:1], c[:1]))
        two.set_epoch(1)
        self.assertTrue(same(c, epoch_of(two)))

    def test_an_abandoned_iteration_is_not_a_complete_epoch(self):
        ld = loader()
        it = iter(ld)
        next(it)
        self.assertNotEqual((ld.state_dict()["index"], ld.state_dict()["skip"]), (0, 0))
        ld.close()  # the run stops: the iteration ends, the epoch is not counted as done
        self.assertEqual(list(it), [])
        self.assertEqual(ld.epoch, 0)
        n = len(ld)
        it = iter(ld)  # the epoch again, from its start
        self.assertEqual((ld.state_dict()["index"], ld.state_dict()["skip"]), (0, 0))
        self.assertEqual(sum(1 for _ in it), n)
        self.assertEqual(ld.epoch, 1)

    def test_state_dict_resumes_mid_epoch_exactly(self):
        ld = loader(set={"batch.size": 7})
        ld.set_epoch(2)
        whole = epoch_of(ld)
        self.assertGreater(len(whole), 5)
        for k in (1, len(whole) // 2):
            ld = loader(set={"batch.size": 7})
            ld.set_epoch(2)
            it = iter(ld)
            for _ in range(k):
                next(it)
            state = ld.state_dict()
            del it
            again = loader(set={"batch.size": 7})
            again.load_state_dict(state)
            self.assertEqual(again.epoch, 2)
            self.assertTrue(same(epoch_of(again), whole[k:]), f"resumed after {k} batches")
            self.assertEqual(again.state_dict()["epoch"], 3)
        wrong = loader(set={"batch.size": 7}, rank=0, world_size=2)
        with self.assertRaisesRegex(streamline.Error, "world_size"):
            wrong.load_state_dict(state)

    def test_ranks_read_disjoint_shards_that_cover_the_epoch(self):
        key = lambda b: list(zip(b["scene_index"].tolist(), b["line_index"].tolist()))
        whole = sorted(sum((key(b) for b in epoch_of(loader(set={"batch.size": 1}))), []))
        parts = []
        for r in range(2):
            parts += sum((key(b) for b in epoch_of(loader(set={"batch.size": 1}, rank=r, world_size=2))), [])
        self.assertTrue(whole)
        self.assertEqual(sorted(parts), whole)

    def test_numpy_arrays_without_torch(self):
        ld = loader(tensors="numpy", set={"batch.drop_last": False})
        batches = [b["context"].shape[0] for b in ld]
        self.assertTrue(all(isinstance(x, int) for x in batches))
        self.assertLessEqual(batches[-1], 16)  # the last, partial batch is cut to its samples
        self.assertEqual(len(ld), len(batches))

    def test_keeping_every_slot_raises_instead_of_waiting_for_ever(self):
        ld = loader(set={"batch.slots": 2})
        kept = []
        with self.assertRaisesRegex(streamline.Error, "all 2 batch slots are held"):
            for b in ld:
                kept.append(b)
        self.assertEqual(len(kept), 2)
        kept.clear()
        self.assertGreater(len(epoch_of(ld)), 2)  # copies are fine; the next epoch runs

    def test_a_bad_file_raises_naming_it_or_is_skipped(self):
        bad = tempfile.mkdtemp(prefix="sl_py_bad_", dir=ROOT)
        for f in os.listdir(os.path.join(ROOT, "train")):
            shutil.copy(os.path.join(ROOT, "train", f), bad)
        with open(os.path.join(bad, "scene_0001.pcd"), "wb") as f:
            f.write(b"VERSION .7\nFIELDS x y z\nSIZE 4 4\n")
        with self.assertRaisesRegex(streamline.Error, "scene_0001.pcd"):
            for _ in loader(set={"scan.root": bad, "read.on_error": "fail"}):
                pass
        ld = loader(set={"scan.root": bad})  # read's default: skip the file and record why
        self.assertGreater(len(epoch_of(ld)), 0)
        skips = [s for s in ld.report()["skips"] if s["stage"] == "read"]
        self.assertEqual(len(skips), 1)
        self.assertIn("scene_0001", skips[0]["item"])

    def test_bad_pipelines_raise_with_the_file_and_the_place(self):
        with self.assertRaisesRegex(streamline.Error, r"/stages/8/params/sise: unknown"):
            loader(set={"batch.sise": 3})
        train = os.path.join(SOURCE, "pipelines", "line_refine_train.json")
        with self.assertRaisesRegex(streamline.Error, r"line_refine_train.json: /stages/10: .*a sink"):
            streamline.Loader(train)
        with self.assertRaisesRegex(ValueError, "device"):
            loader(device="tpu")
        with self.assertRaisesRegex(streamline.Error, r"/stages/8/params/slots: a loader needs at least 2 slots"):
            loader(set={"batch.slots": 1})
        ld = loader(set={"scan.root": "1"})  # a str stays a string (not the number 1)
        with self.assertRaisesRegex(streamline.Error, r"/stages/0/params/root: dataset folder '1' does not exist"):
            len(ld)

    @unittest.skipIf(torch is None, "python3-torch is not installed")
    def test_the_pytorch_example_trains_evaluates_and_resumes(self):
        example = os.path.join(SOURCE, "examples", "pytorch_train.py")
        ckpt = os.path.join(ROOT, "example.pt")
        common = [sys.executable, example, "--train-root", os.path.join(ROOT, "train"), "--val-root",
                  os.path.join(ROOT, "val"), "--batch", "8", "--epochs", "2", "--checkpoint", ckpt]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        first = subprocess.run(common + ["--max-steps", "3"], capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertRegex(first.stdout, r"eval after epoch 1 \(step 3\): \d+ val lines, mean point error")
        self.assertTrue(os.path.exists(ckpt))
        state = torch.load(ckpt)
        self.assertEqual(state["step"], 3)
        self.assertEqual((state["loader"]["epoch"], state["loader"]["skip"] > 0 or state["loader"]["index"] > 0),
                         (0, True))  # mid-epoch: after the third batch
        again = subprocess.run(common + ["--resume", "--max-steps", "5"], capture_output=True, text=True, env=env,
                               timeout=300)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("resumed at epoch 0", again.stdout)
        self.assertIn("step 5", again.stdout)

    def test_ctrl_c_stops_the_iteration_with_keyboard_interrupt(self):
        script = textwrap.dedent(f"""
            import sys, time, streamline
            ld = streamline.Loader({DATA_PIPELINE!r}, set={{"scan.root": {os.path.join(ROOT, "train")!r},
                                   "batch.size": 1, "batch.slots": 2}}, tensors="numpy")
            try:
                for b in ld:
                    print("batch", flush=True)
                    time.sleep(0.05)
            except KeyboardInterrupt:
                print("interrupted", ld.report()["interrupted"], flush=True)
                sys.exit(3)
        """)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
        self.assertEqual(p.stdout.readline().strip(), "batch")
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 3, out)
        self.assertIn("interrupted True", out)


if __name__ == "__main__":
    unittest.main()
