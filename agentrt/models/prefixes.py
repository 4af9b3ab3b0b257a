"""Internal. The KV states of the last prompts a llama.cpp model read, kept so that a prompt
opening like one of them is not read again from its first token.

llama.cpp reuses only what its context holds, the prompt read last: two conversations that
take turns on one model (two sessions of a chat backend, or a run's classifier and its agent,
each with a system prompt of its own) each read their whole prompt again every turn, about
90 tokens a second for the 1.5B on two cores. A state is the context's KV cells, about 28 KB a
token for the 1.5B, kept when a prompt is about to replace it and restored by copying
(llama.cpp copies 25 MB out in 2 ms, back in 6).
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from agentrt.models.confidence import common_prefix

MIN_GAIN = 32
"""Fewer tokens than this saved over what the context holds are not worth a restore."""


class PrefixStates:
    """Up to `budget` bytes of saved states, the least recently used dropped first.

    :param budget: bytes of states kept; 0 keeps none
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._states: OrderedDict[tuple[int, ...], bytes] = OrderedDict()

    def switch(self, llama: Any, prompt: Sequence[int]) -> int:
        """Before `prompt` is read: keep what the context holds if the prompt would discard
        `MIN_GAIN` tokens of it or more (a conversation that goes on costs no copy), then load
        the kept state sharing the longest opening with `prompt`, if it shares `MIN_GAIN`
        tokens more than the context; the tokens that spares."""
        held = common_prefix(llama.input_ids[: llama.n_tokens].tolist(), prompt)
        if llama.n_tokens - held >= MIN_GAIN:
            self._keep(llama)
        best, shared = None, held + MIN_GAIN - 1
        for tokens in self._states:
            n = common_prefix(tokens, prompt)
            if n > shared:
                best, shared = tokens, n
        if best is None:
            return 0
        state = self._states[best]
        self._states.move_to_end(best)
        import llama_cpp

        buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
        if llama_cpp.llama_state_set_data(llama._ctx.ctx, buffer, len(state)) != len(state):
            llama.reset()  # a state the context refused: read the prompt from the start
            return 0
        llama.input_ids[: len(best)] = best
        llama.n_tokens = len(best)
        # The restored logits are the state's last token's, not the prompt's: read again.
        llama._requires_eval = True
        return shared - held

    def _keep(self, llama: Any) -> None:
        """Keep what the context holds, replacing a kept state it continues."""
        if not self.budget:
            return
        import llama_cpp

        tokens = tuple(llama.input_ids[: llama.n_tokens].tolist())
        size = llama_cpp.llama_state_get_size(llama._ctx.ctx)
        buffer = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_get_data(llama._ctx.ctx, buffer, size)
        for kept in [k for k in self._states if k == tokens[: len(k)]]:
            del self._states[kept]
        self._states[tokens] = ctypes.string_at(buffer, written)
        while sum(map(len, self._states.values())) > self.budget and len(self._states) > 1:
            self._states.popitem(last=False)
        if len(self._states[tokens]) > self.budget:
            del self._states[tokens]
