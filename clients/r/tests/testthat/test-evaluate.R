# ok_evaluate(), ok_train(cv = ...) and data.frames with an id column against a live okboost
# server at OKBOOST_URL, compared with what okcore computes on the same data: the file
# OKBOOST_EXPECTED (written by tests/e2e/test_clients.py).

url <- Sys.getenv("OKBOOST_URL")
expected_file <- Sys.getenv("OKBOOST_EXPECTED")
ready <- nzchar(url) && nzchar(expected_file)
why <- "OKBOOST_URL and OKBOOST_EXPECTED are not set: run through tests/e2e/test_clients.py"
expected <- if (ready) jsonlite::fromJSON(expected_file, simplifyVector = TRUE)
d <- expected$data

# the walk-through in R's numbering: rows and edges count from 1
train_model <- function(cl, inputs, edges, ...) {
  fit <- ok_train(cl, inputs, list(type = "diffusion", beta = d$beta, edges = edges),
    params = d$params, ...
  )
  job <- ok_wait(cl, fit$job_id, poll = 0.05)
  expect_equal(job$progress$done, job$progress$total)
  fit$model_id
}

test_that("ok_evaluate equals okcore's metrics, binary and JSON", {
  skip_if(!ready, why)
  for (binary in c(TRUE, FALSE)) {
    cl <- okboost_client(url, binary = binary)
    model_id <- train_model(cl, d$inputs, d$edges + 1)
    got <- ok_evaluate(cl, model_id, d$test_inputs,
      gram_cross = d$gram_cross, gram_diag = d$gram_diag,
      new_new = d$new_new + 1, new_known = d$new_known + 1, k = d$k
    )
    for (name in names(expected$evaluate)) {
      expect_equal(got[[name]], expected$evaluate[[name]], tolerance = 1e-10, info = name)
    }
    expect_equal(got$n_test, nrow(d$test_inputs))
    expect_equal(got$k, d$k)
    observed <- ok_evaluate(cl, model_id, d$test_inputs,
      new_new = d$new_new + 1, new_known = d$new_known + 1, known_scores = "observed"
    )
    expect_equal(observed$auc, expected$evaluate_observed_auc, tolerance = 1e-10)
    expect_null(observed$err_phi)
    expect_equal(observed$k, nrow(d$inputs)) # 10 by default, at most N
    ok_delete_model(cl, model_id)
  }
})

test_that("data.frames with an id column, edges and test edges by id", {
  skip_if(!ready, why)
  cl <- okboost_client(url)
  orf <- sprintf("ORF-%d", seq_len(nrow(d$inputs)))
  features <- data.frame(id = orf, f1 = d$inputs[, 1], f2 = d$inputs[, 2])
  edges <- data.frame(source = orf[d$edges[, 1] + 1], target = orf[d$edges[, 2] + 1])
  model_id <- train_model(cl, features, edges)
  expect_true(ok_model(cl, model_id)$has_ids)

  held_out <- sprintf("new-%d", seq_len(nrow(d$test_inputs)))
  test_features <- data.frame(f1 = d$test_inputs[, 1], f2 = d$test_inputs[, 2], gene = held_out)
  got <- ok_evaluate(cl, model_id, test_features,
    new_new = data.frame(a = held_out[d$new_new[, 1] + 1], b = held_out[d$new_new[, 2] + 1]),
    new_known = cbind(held_out[d$new_known[, 1] + 1], orf[d$new_known[, 2] + 1]),
    k = d$k
  )
  for (name in c("auc", "auc_new_new", "auc_new_known", "precision_at_k")) {
    expect_equal(got[[name]], expected$evaluate[[name]], tolerance = 1e-10, info = name)
  }
  out <- ok_kernel(cl, model_id, test_features, top_k = 2)
  expect_true(all(out$edges$new_known_ids$a %in% held_out))
  expect_true(all(out$edges$new_known_ids$b %in% orf))
  ok_delete_model(cl, model_id)

  expect_error(
    ok_train(cl, features, list(type = "diffusion", edges = edges), ids = orf),
    "not both"
  )
  expect_error(ok_kernel(cl, model_id, data.frame(id = "a", x = "1")), "column 'x'")
})

test_that("positions in messages count from 1, as R does", {
  skip_if(!ready, why)
  cl <- okboost_client(url)
  expect_error(
    ok_train(cl, d$inputs, list(type = "diffusion", beta = 1, edges = rbind(c(1, 2), c(3, 9)))),
    "edges row 2 = \\(3, 9\\): 9 is not a vertex: rows count from 1 to 8"
  )
  expect_error(
    ok_train(cl, d$inputs, list(type = "diffusion", beta = 1, edges = rbind(c(0, 2)))),
    "row 1 = \\(0, 2\\): 0 is not a vertex"
  )
  model_id <- train_model(cl, d$inputs, d$edges + 1)
  expect_error(
    ok_evaluate(cl, model_id, d$test_inputs, new_known = rbind(c(1, 1), c(2, 9))),
    "new_known row 2 = \\(2, 9\\): 9 is not a vertex: rows count from 1 to 8"
  )
  expect_error(
    ok_evaluate(cl, model_id, d$test_inputs, new_new = rbind(c(1, 4))),
    "new_new row 1 = \\(1, 4\\): 4 is not a vertex: rows count from 1 to 3"
  )
  ok_delete_model(cl, model_id)
})

test_that("ok_train with cv keeps okcore's grid-search table and fits the best", {
  skip_if(!ready, why)
  cl <- okboost_client(url)
  model_id <- train_model(cl, d$inputs, d$edges + 1, cv = expected$cv$spec)
  record <- ok_model(cl, model_id)
  expect_equal(record$cv$table, expected$cv$table)
  expect_equal(record$cv$best_params, expected$cv$best_params)
  expect_equal(record$params$max_splits, expected$cv$best_params$max_splits)
  err <- tryCatch(
    ok_train(cl, d$inputs, list(type = "diffusion", beta = 1, edges = d$edges + 1),
      cv = list(folds = 1)
    ),
    okboost_error = function(e) e
  )
  expect_s3_class(err, "okboost_error")
  expect_equal(err$status, 422)
  expect_match(conditionMessage(err), "cv.folds")
  ok_delete_model(cl, model_id)
})

test_that("inputs and ids are checked here, naming rows from 1", {
  cl <- okboost_client("http://127.0.0.1:9") # never reached: the checks come first
  X <- rbind(c(0, 1), c(1, Inf))
  expect_error(ok_kernel(cl, "m", X), "inputs row 2, column 2 is Inf")
  expect_error(
    ok_predict(cl, "m", rbind(c(0, 1), c(1, 0), c(1, 1)), ids = c("a", "b", "a")),
    "id 3 \\(\"a\"\\) repeats id 1"
  )
  expect_error(ok_kernel(cl, "m", rbind(c(0, 1)), ids = c("a", "b")), "2 ids for the 1 rows")
})
