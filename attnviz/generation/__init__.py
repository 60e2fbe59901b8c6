"""A decoder at work: the prompt processed at once (prefill), then one token at a time, each new
token's query read against every cached key and value (the KV cache), its logits turned into
probabilities (temperature, top-k, top-p) and one token chosen.

    sampling.py   logits -> the choice, every cut worked out (pure numpy)
    cache.py      the K/V cache: what it holds, its shape and its bytes
    decoder.py    one family's layers run on new tokens against the cache
    run.py        prefill, the token-by-token loop, and the proof against a whole-sequence pass
"""
