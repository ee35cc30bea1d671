/* A shared library that is not a gatec model: no gatec_model_get_abi. */
__attribute__((visibility("default"))) int not_a_model(void) { return 42; }
