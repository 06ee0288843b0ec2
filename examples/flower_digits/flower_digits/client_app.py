"""flower_digits: the ClientApp, a Flower client as Flower's PyTorch quickstart writes it."""

from __future__ import annotations

import torch
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from flower_digits.task import Net, load_data, run_config_value
from flower_digits.task import test as test_fn
from flower_digits.task import train as train_fn

app = ClientApp()
DEVICE = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


@app.train()
def train(msg: Message, context: Context) -> Message:
    """Train the received model on this node's partition; reply with the new arrays and the examples
    trained on (asyncfl's clock reads the work as num-examples x local-epochs)."""
    model = Net()
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    server_round = int(msg.content["config"].get("server-round", 0))
    partition_id = int(context.node_config["partition-id"])
    trainloader, _ = load_data(
        partition_id,
        int(context.node_config["num-partitions"]),
        batch_size=int(run_config_value(context.run_config, "batch-size")),
        shuffle_seed=1000 * server_round + partition_id,
    )
    epochs = int(run_config_value(context.run_config, "local-epochs"))
    lr = float(run_config_value(context.run_config, "lr"))
    train_loss = train_fn(model, trainloader, epochs, lr, DEVICE)
    metrics = MetricRecord({"train_loss": train_loss, "num-examples": len(trainloader.dataset)})
    content = RecordDict({"arrays": ArrayRecord(model.state_dict()), "metrics": metrics})
    return Message(content=content, reply_to=msg)


@app.evaluate()
def evaluate(msg: Message, context: Context) -> Message:
    """Evaluate the received model on this node's test share."""
    model = Net()
    model.load_state_dict(msg.content["arrays"].to_torch_state_dict())
    _, testloader = load_data(int(context.node_config["partition-id"]), int(context.node_config["num-partitions"]))
    eval_loss, eval_acc = test_fn(model, testloader, DEVICE)
    metrics = MetricRecord({"eval_loss": eval_loss, "eval_acc": eval_acc, "num-examples": len(testloader.dataset)})
    return Message(content=RecordDict({"metrics": metrics}), reply_to=msg)
