"""The one folder hash (image tags, output cache keys), and engine failures that never leak Docker's
own exceptions past runner/execution."""

from __future__ import annotations

import hashlib

import docker
import pytest

from runner.execution.docker_engine import DockerEngine
from runner.execution.images import image_tag, tree_hash
from runner.execution.sandbox import RunSpec, SandboxError


def folder(tmp_path, name: str, files: dict[str, bytes]):
    root = tmp_path / name
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def test_tree_hash_depends_on_names_and_content_not_on_where_the_folder_is(tmp_path):
    a = folder(tmp_path, "a", {"x.npy": b"1", "sub/y.npy": b"2"})
    b = folder(tmp_path, "b", {"x.npy": b"1", "sub/y.npy": b"2"})
    assert tree_hash(a) == tree_hash(b)
    assert tree_hash(a) != tree_hash(folder(tmp_path, "c", {"x.npy": b"1", "sub/y.npy": b"3"}))
    assert tree_hash(a) != tree_hash(folder(tmp_path, "d", {"z.npy": b"1", "sub/y.npy": b"2"}))
    assert tree_hash(a, "extra") != tree_hash(a)


def test_tree_hash_is_the_recipe_results_and_tags_are_made_with(tmp_path):
    """Each record framed: a file's path by its length, its mode, its content's own hash; then each extra."""
    root = folder(tmp_path, "a", {"b.txt": b"bee", "a.txt": b"ay"})

    def record(name: bytes, data: bytes) -> bytes:
        return b"f" + len(name).to_bytes(8, "big") + name + b"-" + hashlib.sha256(data).digest()

    expected = hashlib.sha256(record(b"a.txt", b"ay") + record(b"b.txt", b"bee")
                              + b"x" + (4).to_bytes(8, "big") + b"base").hexdigest()
    assert tree_hash(root, "base") == expected
    assert image_tag(root, name="img", base="base") == f"img:{expected[:16]}"


def test_two_different_trees_never_share_a_hash(tmp_path):
    """Unframed, a file `a` holding `x NUL b NUL y` hashed like files `a` (x) and `b` (y): two trained
    models shared one model.sha256, and the output cache served one's predictions for the other."""
    one = folder(tmp_path, "one", {"a": b"x\0b\0y"})
    two = folder(tmp_path, "two", {"a": b"x", "b": b"y"})
    assert tree_hash(one) != tree_hash(two)
    assert tree_hash(folder(tmp_path, "three", {"a": b"xy"})) != tree_hash(folder(tmp_path, "four", {"a": b"x"}), "y")
    script = folder(tmp_path, "five", {"run.sh": b"echo"})
    before = tree_hash(script)
    (script / "run.sh").chmod(0o755)
    assert tree_hash(script) != before


def test_build_arguments_and_base_change_the_tag(tmp_path):
    root = folder(tmp_path, "a", {"Dockerfile": b"ARG BASE\nFROM ${BASE}\n"})
    tags = {image_tag(root, name="img", base=base, args=args)
            for base in ("python:3.11-slim", "challenge-base:1") for args in (None, {"MODE": "a"}, {"MODE": "b"})}
    assert len(tags) == 6


def test_unreachable_engine_is_a_transient_sandbox_error(tmp_path):
    client = docker.DockerClient(base_url=f"unix://{tmp_path}/no-engine.sock", version="1.41", timeout=2)
    engine = DockerEngine(client, keeper_image="base")
    for call in (lambda: engine.image_id("ghcr.io/a/b@sha256:" + "a" * 64),
                 lambda: engine.run(RunSpec(image="sha256:" + "a" * 64)),
                 lambda: engine.remove_labelled("c/p/alice/v1"),
                 lambda: engine.remove_as(tmp_path, "1000:1000"),
                 lambda: engine.build(folder(tmp_path, "ctx", {"Dockerfile": b"FROM x\n"}), name="n", base=None)):
        with pytest.raises(SandboxError) as caught:
            call()
        assert caught.value.transient, caught.value


def test_engine_from_the_environment_that_is_not_there_is_a_transient_sandbox_error(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(SandboxError, match="cannot reach the Docker engine") as caught:
        DockerEngine().ensure_base()
    assert caught.value.transient


def test_extra_context_changes_the_tag_but_byte_code_caches_do_not(tmp_path):
    root = folder(tmp_path, "eval", {"Dockerfile": b"ARG BASE\nFROM ${BASE}\nCOPY kit /kit\n"})
    kit = folder(tmp_path, "kit", {"__init__.py": b"X = 1\n"})
    plain = image_tag(root, name="img", base="b")
    with_kit = image_tag(root, name="img", base="b", extra_context={"kit": kit})
    assert plain != with_kit
    (kit / "__pycache__").mkdir()
    (kit / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"\0compiled")
    assert image_tag(root, name="img", base="b", extra_context={"kit": kit}) == with_kit
    (kit / "__init__.py").write_bytes(b"X = 2\n")
    assert image_tag(root, name="img", base="b", extra_context={"kit": kit}) != with_kit


def test_a_folder_holding_the_extra_name_keeps_its_own_copy(tmp_path):
    from runner.execution.images import assemble_context
    root = folder(tmp_path, "eval", {"Dockerfile": b"FROM x\n", "kit/own.py": b"mine"})
    kit = folder(tmp_path, "kit", {"runner.py": b"theirs", "__pycache__/a.pyc": b"\0"})
    other = folder(tmp_path, "other", {"b.py": b"b"})
    context = assemble_context(root, {"kit": kit, "other": other}, tmp_path / "ctx")
    assert sorted(str(p.relative_to(context)) for p in context.rglob("*") if p.is_file()) == [
        "Dockerfile", "kit/own.py", "other/b.py"]
    assert image_tag(root, name="i", base=None, extra_context={"kit": kit}) == image_tag(root, name="i", base=None)
