"""Stand-in for LLaDA's configuration_llada.py (written for MEDAL's tests, see README.md).

Like the genuine config, ``use_cache`` is a constructor argument that is only handed on
to ``PretrainedConfig.__init__`` -- the class itself never sets it -- while the model's
forward reads ``self.config.use_cache``. The defaults mirror LLaDA's ``ModelConfig``."""
from transformers import AutoConfig, PretrainedConfig

DEFAULTS = dict(d_model=768, n_heads=12, n_kv_heads=None, n_layers=12, mlp_ratio=4,
                mlp_hidden_size=None, activation_type="swiglu", block_type="sequential",
                rope=False, rope_theta=10000.0, rope_full_precision=True,
                include_bias=True, include_qkv_bias=False, layer_norm_type="default",
                rms_norm_eps=1e-05, max_sequence_length=1024, vocab_size=50257,
                embedding_size=50304, weight_tying=True, mask_token_id=None,
                eos_token_id=50256, pad_token_id=50256, init_device=None,
                scale_logits=False)


class LLaDAConfig(PretrainedConfig):
    model_type = "llada"
    keys_to_ignore_at_inference = ["past_key_values"]

    def __init__(self, use_cache: bool = False, **kwargs):
        all_kwargs = dict(DEFAULTS)
        all_kwargs.update(kwargs)
        all_kwargs.update({"use_cache": use_cache})
        all_kwargs.update({"architectures": all_kwargs.get("architectures", ["LLaDAModelLM"])})
        super().__init__(**all_kwargs)

    @property
    def num_attention_heads(self):
        return self.n_heads

    @property
    def num_hidden_layers(self):
        return self.n_layers

    @property
    def hidden_size(self):
        return self.d_model


AutoConfig.register("llada", LLaDAConfig)
