"""The sizes and seed of a multi-head attention layer, validated once, on construction."""

from __future__ import annotations

from dataclasses import dataclass

from attnviz.arguments import few_digits
from attnviz.errors import AttnvizError, option, shown_value, spelled

#: Longest sentence attnviz accepts, in tokens. 512 is BERT's context and the paper's order of
#: magnitude; beyond it the step tables stop being something a person can read.
MAX_TOKENS = 512

#: Largest d_model accepted. The paper's big model uses 1024; at 2048 the four weight matrices
#: take 4·2048²·8 bytes = 134 MB, while a mistyped 8192 would take over 2 GB.
MAX_D_MODEL = 2048


@dataclass(frozen=True)
class AttentionConfig:
    """Sizes of one multi-head self-attention layer, as named in "Attention Is All You Need".

    The defaults are small so that every table of ``attnviz explain "I am good"`` fits in 100
    terminal columns; ``AttentionConfig.paper()`` gives the paper's base model.
    """

    d_model: int = 8  # width of each token's embedding, the rows of X
    n_heads: int = 2  # h: how many heads attend in parallel, each on its own projection
    seed: int = 0  # seeds the random embeddings and weights; same seed, same numbers
    # G: key/value heads, each shared by h/G query heads (grouped-query attention); None: h,
    # the paper's attention, every head with its own keys and values. 1 is multi-query attention.
    n_kv_heads: int | None = None

    def __post_init__(self) -> None:
        few_digits(
            d_model=self.d_model, heads=self.n_heads, seed=self.seed, kv_heads=self.n_kv_heads
        )
        for name, value in (
            (spelled("d_model (--d-model)", "d_model"), self.d_model),
            (spelled("heads (--heads)", "heads"), self.n_heads),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise AttnvizError(
                    f"{name} must be a positive whole number, got {shown_value(value)}."
                )
        if self.d_model > MAX_D_MODEL:
            raise AttnvizError(
                f"d_model {self.d_model} is too large; use at most {MAX_D_MODEL} "
                "(the paper's base model uses 512)."
            )
        if self.n_heads > MAX_D_MODEL:
            raise AttnvizError(
                f"{spelled('heads (--heads)', 'heads')} {self.n_heads} is too many: each head "
                f"gets d_k = d_model / heads ≥ 1 columns and d_model is at most {MAX_D_MODEL}, "
                f"so use at most {MAX_D_MODEL} heads (2 to 16 are usual)."
            )
        if self.d_model % self.n_heads != 0:
            # The multiple of heads nearest d_model, within the largest d_model allowed.
            multiple = self.n_heads * min(
                max(1, round(self.d_model / self.n_heads)), MAX_D_MODEL // self.n_heads
            )
            raise AttnvizError(
                f"d_model {self.d_model} is not divisible by {self.n_heads} heads; "
                "each head gets d_k = d_model / heads columns, so pick a multiple "
                f"such as {option('d_model', multiple)}."
            )
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise AttnvizError(f"seed must be a whole number >= 0, got {shown_value(self.seed)}.")
        if self.n_kv_heads is not None:
            check_kv_heads(self.n_kv_heads, self.n_heads)
            if self.n_kv_heads == self.n_heads:  # the paper's attention, however it was asked
                object.__setattr__(self, "n_kv_heads", None)

    @property
    def kv_heads(self) -> int:
        """G, the key/value heads: h unless grouped-query attention shares them."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def d_k(self) -> int:
        """Width of each head's queries, keys and values: d_k = d_v = d_model / h."""
        return self.d_model // self.n_heads

    @classmethod
    def paper(cls, seed: int = 0) -> AttentionConfig:
        """The base model of Vaswani et al. (2017): d_model 512, 8 heads, d_k 64."""
        return cls(d_model=512, n_heads=8, seed=seed)


def check_kv_heads(n_kv_heads: object, n_heads: int) -> None:
    """Refuse a number of key/value heads that does not divide the query heads evenly."""
    name = option("kv_heads")
    if not isinstance(n_kv_heads, int) or isinstance(n_kv_heads, bool) or n_kv_heads <= 0:
        raise AttnvizError(
            f"{name} must be a positive whole number, got {shown_value(n_kv_heads)}."
        )
    if n_heads % n_kv_heads != 0:
        divisors = [str(g) for g in range(1, n_heads + 1) if n_heads % g == 0]
        shown = ", ".join(divisors[:8]) + (", …" if len(divisors) > 8 else "")
        raise AttnvizError(
            f"{option('kv_heads', n_kv_heads)} does not divide {n_heads} heads: each key/value "
            f"head is shared by heads / kv-heads query heads, so pick a divisor of {n_heads} "
            f"({shown})."
        )


def resolve_config(
    *,
    d_model: int | None = None,
    n_heads: int | None = None,
    seed: int = 0,
    paper: bool = False,
    embedding_width: int | None = None,
    weights_shape: tuple[int, int] | None = None,
    n_kv_heads: int | None = None,
    weights_kv_heads: int | None = None,
) -> AttentionConfig:
    """Settle d_model and heads from what was asked and what the files imply.

    Sources, strongest first: explicit sizes, the paper preset, a weights file's shape
    (heads, d_model), an embeddings file's width, then the defaults. Contradictions are errors
    that name both sides. The key/value heads: those asked for, else the weights file's, else h.
    """
    default = AttentionConfig.paper() if paper else AttentionConfig()
    if paper and (d_model is not None or n_heads is not None):
        raise AttnvizError(
            f"{option('preset', 'paper')} fixes d_model 512 and 8 heads; drop "
            f"{option('d_model')}/{option('heads')}, or the preset."
        )
    chosen_d_model = d_model if d_model is not None else None
    chosen_heads = n_heads
    if paper:
        chosen_d_model, chosen_heads = default.d_model, default.n_heads
    if weights_shape is not None:
        file_heads, file_d_model = weights_shape
        if chosen_d_model is not None and chosen_d_model != file_d_model:
            raise AttnvizError(
                f"The weights file has d_model {file_d_model} but {chosen_d_model} was asked for; "
                "drop the size options to use the file's."
            )
        if chosen_heads is not None and chosen_heads != file_heads:
            raise AttnvizError(
                f"The weights file has {file_heads} heads but {chosen_heads} were asked for; "
                f"drop {option('heads')} to use the file's."
            )
        chosen_d_model, chosen_heads = file_d_model, file_heads
    if embedding_width is not None:
        if chosen_d_model is not None and chosen_d_model != embedding_width:
            # Say where the other d_model came from: the weights file, or the options.
            fix = (
                f"the weights file's W_Q has d_model {chosen_d_model}; they must match (use "
                "embeddings and weights made together)"
                if weights_shape is not None
                else f"d_model is {chosen_d_model}; they must match (drop "
                f"{option('d_model')}/{option('preset')}, or use other embeddings)"
            )
            raise AttnvizError(f"The embeddings have {embedding_width} dimensions but {fix}.")
        chosen_d_model = embedding_width
    heads = chosen_heads if chosen_heads is not None else default.n_heads
    if weights_kv_heads is not None and n_kv_heads not in (None, weights_kv_heads):
        raise AttnvizError(
            f"The weights file has {weights_kv_heads} key/value heads but {n_kv_heads} were asked "
            f"for; drop {option('kv_heads')} to use the file's."
        )
    kv_heads = n_kv_heads if n_kv_heads is not None else weights_kv_heads
    return AttentionConfig(
        d_model=chosen_d_model if chosen_d_model is not None else default.d_model,
        n_heads=heads,
        seed=seed,
        n_kv_heads=None if kv_heads == heads else kv_heads,
    )
