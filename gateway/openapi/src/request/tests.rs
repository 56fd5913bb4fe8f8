use super::*;
use crate::fixtures::{PETSTORE, SHOP, operation, translate};
use serde_json::json;

fn url(text: &str) -> Url {
    Url::parse(text).expect("a URL")
}

fn arguments(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn path_arguments_are_percent_encoded_as_one_segment() {
    let shop = translate(SHOP);
    let item = operation(&shop, "getOrderItem");
    let base = url("https://api.example");
    let cases = [
        ("plain", "https://api.example/orders/plain/items/x"),
        ("a b", "https://api.example/orders/a%20b/items/x"),
        ("a/b", "https://api.example/orders/a%2Fb/items/x"),
        ("a?b#c", "https://api.example/orders/a%3Fb%23c/items/x"),
        ("é€", "https://api.example/orders/%C3%A9%E2%82%AC/items/x"),
        ("50%", "https://api.example/orders/50%25/items/x"),
        ("~-._", "https://api.example/orders/~-._/items/x"),
        (
            "a,b;c=d&e+f",
            "https://api.example/orders/a%2Cb%3Bc%3Dd%26e%2Bf/items/x",
        ),
        ("...", "https://api.example/orders/.../items/x"),
    ];
    for (order, expected) in cases {
        let request = item
            .request(&base, &arguments(json!({"orderId": order, "sku": ["x"]})))
            .expect(order);
        assert_eq!(request.url.as_str(), expected, "{order}");
        assert_eq!(request.method, Method::GET);
        assert_eq!(request.body, None);
    }
    // An array in a path: its items comma-separated, each encoded.
    let request = item
        .request(
            &base,
            &arguments(json!({"orderId": "o", "sku": ["x", "y z", "1,2"]})),
        )
        .expect("an array");
    assert_eq!(
        request.url.as_str(),
        "https://api.example/orders/o/items/x,y%20z,1%2C2"
    );
}

#[test]
fn an_argument_cannot_move_the_request_elsewhere() {
    let shop = translate(SHOP);
    let item = operation(&shop, "getOrderItem");
    let base = url("https://api.example/base/");
    for order in [".", "..", ""] {
        let error = item
            .request(&base, &arguments(json!({"orderId": order, "sku": ["x"]})))
            .expect_err(order);
        let expected = if order.is_empty() {
            "argument `orderId` is empty (a path parameter needs a value)"
        } else {
            "the path would have a `.` or `..` segment (an argument cannot move the request elsewhere)"
        };
        assert_eq!(error.message(), expected, "{order}");
    }
    let error = item
        .request(&base, &arguments(json!({"orderId": "o", "sku": [".."]})))
        .expect_err("a dot segment from an array");
    assert!(error.message().contains("`..`"), "{error}");
}

#[test]
fn query_arguments_follow_the_parameter_style_and_the_base_url_keeps_its_prefix() {
    let petstore = translate(PETSTORE);
    let list = operation(&petstore, "listPets");
    let args = arguments(json!({
        "X-Request-Id": "r-1",
        "tags": ["a", "b c", "x&y=z"],
        "ids": [1, 2, 3],
        "limit": 10
    }));
    let expected =
        "https://pets.example/v1/pets?limit=10&tags=a&tags=b%20c&tags=x%26y%3Dz&ids=1,2,3";
    for base in [
        "https://pets.example/v1",
        "https://pets.example/v1/",
        "https://pets.example/v1/#fragment",
    ] {
        let request = list.request(&url(base), &args).expect(base);
        assert_eq!(request.url.as_str(), expected, "{base}");
        assert_eq!(
            request.headers,
            [
                (
                    HeaderName::from_static("x-request-id"),
                    HeaderValue::from_static("r-1")
                ),
                (header::ACCEPT, HeaderValue::from_static("application/json")),
            ]
        );
    }
    // Empty arrays and absent optional arguments add nothing.
    let request = list
        .request(
            &url("https://pets.example"),
            &arguments(json!({"X-Request-Id": "r", "tags": [], "limit": null})),
        )
        .expect("optional arguments left out");
    assert_eq!(request.url.as_str(), "https://pets.example/pets");

    let shop = translate(SHOP);
    let orders = operation(&shop, "listOrders");
    let request = orders
        .request(
            &url("https://api.example/base?key=k"),
            &arguments(json!({"status": ["open", "on hold"], "q": null})),
        )
        .expect("pipe-delimited");
    assert_eq!(
        request.url.as_str(),
        "https://api.example/base/orders?key=k&status=open|on%20hold"
    );

    let get = operation(&petstore, "get_pet_");
    let request = get
        .request(
            &url("http://127.0.0.1:8080"),
            &arguments(json!({"petId": 7, "verbose": true})),
        )
        .expect("scalars");
    assert_eq!(
        request.url.as_str(),
        "http://127.0.0.1:8080/pets/7?verbose=true"
    );
}

#[test]
fn the_body_is_the_json_of_the_body_argument() {
    let petstore = translate(PETSTORE);
    let create = operation(&petstore, "createPet");
    let pet = json!({"name": "Rex", "tag": null});
    let request = create
        .request(
            &url("https://pets.example"),
            &arguments(json!({"body": pet})),
        )
        .expect("a body");
    assert_eq!(request.method, Method::POST);
    assert_eq!(request.body, Some(serde_json::to_vec(&pet).expect("JSON")));
    assert_eq!(
        request.headers,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json")
            ),
            (header::ACCEPT, HeaderValue::from_static("application/json")),
        ]
    );
    let shop = translate(SHOP);
    let request = operation(&shop, "createOrder")
        .request(
            &url("https://api.example"),
            &arguments(json!({"body": {"id": "1"}})),
        )
        .expect("a body");
    assert_eq!(request.headers[0].1, "application/vnd.shop+json");
    // No body argument, no body: an operation without a JSON body.
    let report = operation(&petstore, "report");
    let request = report
        .request(&url("https://pets.example"), &Map::new())
        .expect("no arguments");
    assert_eq!((request.body, request.headers.len()), (None, 0));
}

#[test]
fn a_missing_unknown_or_mistyped_argument_is_a_call_error_naming_it() {
    let petstore = translate(PETSTORE);
    let base = url("https://pets.example");
    let cases = [
        (
            "listPets",
            json!({}),
            "missing required argument `X-Request-Id`",
        ),
        (
            "listPets",
            json!({"X-Request-Id": null}),
            "missing required argument `X-Request-Id`",
        ),
        ("createPet", json!({}), "missing required argument `body`"),
        (
            "get_pet_",
            json!({"verbose": true}),
            "missing required argument `petId`",
        ),
        (
            "get_pet_",
            json!({"petId": "abc"}),
            "argument `petId` must be an integer, not a string",
        ),
        (
            "get_pet_",
            json!({"petId": 1.5}),
            "argument `petId` must be an integer, not a number",
        ),
        (
            "get_pet_",
            json!({"petId": 1, "verbose": "yes"}),
            "argument `verbose` must be a boolean, not a string",
        ),
        (
            "listPets",
            json!({"X-Request-Id": "r", "limit": {}}),
            "argument `limit` must be an integer, not an object",
        ),
        (
            "listPets",
            json!({"X-Request-Id": "r", "tags": "a"}),
            "argument `tags` must be an array, not a string",
        ),
        (
            "listPets",
            json!({"X-Request-Id": "r", "ids": [1, "x"]}),
            "argument `ids` item 1 must be an integer, not a string",
        ),
        (
            "listPets",
            json!({"X-Request-Id": ["a"]}),
            "argument `X-Request-Id` must be a string, not an array",
        ),
        (
            "listPets",
            json!({"X-Request-Id": "a\r\nHost: evil"}),
            "argument `X-Request-Id` is not a valid header value (control characters)",
        ),
        (
            "listPets",
            json!({"X-Request-Id": "r", "Authorization": "Bearer x"}),
            "unknown argument `Authorization`",
        ),
        (
            "get_pet_",
            json!({"petId": 1, "body": {}}),
            "unknown argument `body`",
        ),
    ];
    for (name, args, expected) in cases {
        let error = operation(&petstore, name)
            .request(&base, &arguments(args.clone()))
            .expect_err(&args.to_string());
        assert_eq!(error.message(), expected, "{name} {args}");
        assert_eq!(error.to_string(), expected);
    }
    let mail = url("mailto:someone@example.com");
    let error = operation(&petstore, "report")
        .request(&mail, &Map::new())
        .expect_err("no path");
    assert_eq!(
        error.message(),
        "the base url `mailto:someone@example.com` cannot have a path"
    );
}
