"""Qwen2 decoders: config.json's model_type "qwen2" (Qwen2, Qwen2.5). The Llama layer of
attnviz.model.families.llama, with biases on Q, K and V (none on the output projection)."""

from __future__ import annotations

from attnviz.model.base import Family
from attnviz.model.families.llama import FAMILY as LLAMA_FAMILY
from attnviz.model.families.llama import Llama

FAMILY = Family(
    tokenizer=LLAMA_FAMILY.tokenizer,
    word_order=LLAMA_FAMILY.word_order.replace("a Llama-family model", "a Qwen2 model"),
    sublayer="In the model this attention is one sublayer of a decoder layer, with biases on "
    "Q, K and V (Q = X·W_Q + b_Q and so on) but none on the output projection (b_O = 0), "
    "where X = "
    "RMSNorm(h), the residual stream h divided by its root mean square and scaled by learned "
    "weights (no mean subtracted, no bias). Q and K are rotated by their positions (RoPE) "
    "before the scores; V is not. Its output is added back, h' = h + output; a SwiGLU "
    "feed-forward block, (SiLU(X'·W_gate) ⊙ X'·W_up)·W_down with X' = RMSNorm(h'), is added "
    "the same way to give the next layer's h. Each word attends only to itself and the words "
    "before it (a causal mask).",
    after_attention=LLAMA_FAMILY.after_attention,
    layer_input=LLAMA_FAMILY.layer_input,
    special_tokens=LLAMA_FAMILY.special_tokens,
    special_names=LLAMA_FAMILY.special_names,
    token_unit=LLAMA_FAMILY.token_unit,
    later_word_order=LLAMA_FAMILY.later_word_order.replace("a Llama-family model", "a Qwen2 model"),
)


class Qwen2(Llama):
    model_type = "qwen2"
    description = "Qwen2 decoder"
    family = FAMILY
    qkv_bias_always = True  # q_proj, k_proj and v_proj, whatever attention_bias says
    own_window = True


ARCHITECTURE = Qwen2()
