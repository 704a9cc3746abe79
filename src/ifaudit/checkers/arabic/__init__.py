"""Our Arabic checker registries (Inception's and the Hugging Face variant's) and the Arabic text
helpers they and the Arabic gates share."""
