import json
import os

print(json.dumps({"message": os.environ.get("RUNX_INPUT_MESSAGE", "")}))
