"""Text generation with a Hugging Face model: the prompt never reaches the GPU."""
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

device = "cuda" if torch.cuda.is_available() else "cpu"
tokenizer = AutoTokenizer.from_pretrained("gpt2")
model = AutoModelForCausalLM.from_pretrained("gpt2").to(device)

prompt = "The quickest way to waste a GPU hour is"
inputs = tokenizer(prompt, return_tensors="pt")
output_ids = model.generate(**inputs, max_new_tokens=20)
print(tokenizer.decode(output_ids[0], skip_special_tokens=True))
