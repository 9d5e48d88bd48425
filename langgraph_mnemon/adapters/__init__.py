"""Adapters: everything that talks to something outside the process or to a model.

``providers`` holds the Memory Space providers (native ``mnemos``, ``chroma``, ``store``);
``embeddings`` the embedding functions (LangChain ``Embeddings``, HTTP, the offline default).
"""
