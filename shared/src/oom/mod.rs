//! Parsing of pasted out-of-memory errors (PyTorch, vLLM, llama.cpp).
