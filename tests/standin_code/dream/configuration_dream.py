"""Stand-in for Dream's configuration_dream.py (written for MEDAL's tests, see README.md):
a Qwen2-style config with Dream's mask and pad ids, validated as the genuine one does."""
from transformers.configuration_utils import PretrainedConfig
from transformers.modeling_rope_utils import rope_config_validation


class DreamConfig(PretrainedConfig):
    model_type = "Dream"
    keys_to_ignore_at_inference = ["past_key_values"]

    def __init__(self, vocab_size=151936, hidden_size=4096, intermediate_size=22016,
                 num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=32,
                 hidden_act="silu", max_position_embeddings=32768, initializer_range=0.02,
                 rms_norm_eps=1e-6, use_cache=False, tie_word_embeddings=False,
                 rope_theta=10000.0, rope_scaling=None, use_sliding_window=False,
                 sliding_window=4096, max_window_layers=28, attention_dropout=0.0,
                 mask_token_id=151666, pad_token_id=151643, **kwargs):
        self.vocab_size = vocab_size
        self.max_position_embeddings = max_position_embeddings
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.use_sliding_window = use_sliding_window
        self.sliding_window = sliding_window if use_sliding_window else None
        self.max_window_layers = max_window_layers
        if num_key_value_heads is None:
            num_key_value_heads = num_attention_heads
        self.num_key_value_heads = num_key_value_heads
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.rms_norm_eps = rms_norm_eps
        self.use_cache = use_cache
        self.rope_theta = rope_theta
        self.rope_scaling = rope_scaling
        self.attention_dropout = attention_dropout
        if self.rope_scaling is not None and "type" in self.rope_scaling:
            self.rope_scaling["rope_type"] = self.rope_scaling["type"]
        rope_config_validation(self)
        super().__init__(tie_word_embeddings=tie_word_embeddings, **kwargs)
        self.mask_token_id = mask_token_id
        self.pad_token_id = pad_token_id
